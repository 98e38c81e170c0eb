package sim

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/thrift"
)

// BenchmarkGetOperationStatus measures the simulator alone: status polls
// per second over loopback with sources/thrift's client (target ≥ 5,000/s
// on the 2-core machine, so the test bed is never the bottleneck).
//
//	go test -run '^$' -bench GetOperationStatus -benchtime 3s ./sources/sim/
func BenchmarkGetOperationStatus(b *testing.B) {
	s := startSim(b, Options{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	b.Cleanup(tr.CloseIdleConnections)
	c, err := thrift.NewClient(thrift.Options{Host: s.URL(), Token: s.Token(), UserAgent: "dbxtop/bench", Transport: tr})
	if err != nil {
		b.Fatal(err)
	}
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		b.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT sleep(3600)", false)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := c.GetOperationStatus(ctx, op.Ref); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(4) // 4 × GOMAXPROCS pollers
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.GetOperationStatus(ctx, op.Ref); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	})
}
