package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// BenchmarkProxyAddedLatencyAt1000RPS times GetOperationStatus round trips
// on loopback, direct to the simulator and through the proxy, interleaved
// one per millisecond (1,000 RPC/s in all), and reports both and the
// difference at p50 and p99 from the same run (docs/performance.md).
func BenchmarkProxyAddedLatencyAt1000RPS(b *testing.B) {
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioQuiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	p, err := Start(context.Background(), Options{Upstream: s.URL(), Heal: true}, ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := context.Background()
	mk := func(host string) (*thrift.Client, sources.Ref) {
		c, err := thrift.NewClient(thrift.Options{Host: host, Token: s.Token(), UserAgent: "bench/1"})
		if err != nil {
			b.Fatal(err)
		}
		sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
		if err != nil {
			b.Fatal(err)
		}
		op, err := c.Execute(ctx, sess, "SELECT 1", false)
		if err != nil {
			b.Fatal(err)
		}
		return c, op.Ref
	}
	dc, dref := mk(s.URL())
	pc, pref := mk(p.URL())
	defer dc.CloseIdleConnections()
	defer pc.CloseIdleConnections()
	var direct, proxied []time.Duration
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		<-tick.C
		c, ref, out := dc, dref, &direct
		if i%2 == 1 {
			c, ref, out = pc, pref, &proxied
		}
		t0 := time.Now()
		if _, err := c.GetOperationStatus(ctx, ref); err != nil {
			b.Fatal(err)
		}
		*out = append(*out, time.Since(t0))
	}
	b.StopTimer()
	if len(proxied) == 0 {
		return
	}
	pct := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds())
	}
	d50, d99, p50, p99 := pct(direct, .50), pct(direct, .99), pct(proxied, .50), pct(proxied, .99)
	b.ReportMetric(d50, "direct-p50-µs")
	b.ReportMetric(p50, "proxy-p50-µs")
	b.ReportMetric(p50-d50, "added-p50-µs")
	b.ReportMetric(d99, "direct-p99-µs")
	b.ReportMetric(p99, "proxy-p99-µs")
	b.ReportMetric(p99-d99, "added-p99-µs")
}

// rssKB reads the process's resident set size (Linux).
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(ln, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkProxyStreams100MBFetch streams one 100 MB FetchResults answer
// from a generating upstream through the proxy to a client that discards
// it, and reports the process's RSS and heap growth while it streams: the
// proxy must not hold the answer (it keeps a 64 KiB prefix to decode).
func BenchmarkProxyStreams100MBFetch(b *testing.B) {
	const size = 100 << 20
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", thrift.ContentType)
		bw := bufio.NewWriterSize(w, 32<<10)
		// A real header and status (what the proxy decodes), then bulk.
		buf := athrift.NewTMemoryBuffer()
		pr := athrift.NewTBinaryProtocolConf(buf, nil)
		ctx := context.Background()
		_ = pr.WriteMessageBegin(ctx, "FetchResults", athrift.REPLY, 1)
		_ = pr.WriteStructBegin(ctx, "r")
		_ = pr.WriteFieldBegin(ctx, "success", athrift.STRUCT, 0)
		_ = pr.WriteStructBegin(ctx, "resp")
		_ = pr.WriteFieldBegin(ctx, "status", athrift.STRUCT, 1)
		_ = pr.WriteStructBegin(ctx, "status")
		_ = pr.WriteFieldBegin(ctx, "statusCode", athrift.I32, 1)
		_ = pr.WriteI32(ctx, 0)
		_ = pr.WriteFieldStop(ctx)
		_ = pr.WriteStructEnd(ctx)
		_ = pr.Flush(ctx)
		_, _ = bw.Write(buf.Bytes())
		chunk := bytes.Repeat([]byte{'x'}, 64<<10)
		for n := 0; n < size; n += len(chunk) {
			if _, err := bw.Write(chunk); err != nil {
				return
			}
		}
		_ = bw.Flush()
	}))
	defer up.Close()
	p, err := Start(context.Background(), Options{Upstream: up.URL, Heal: true}, ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	ref := sources.Ref{StatementID: "01234567-89ab-cdef-0123-456789abcdef", WarehouseID: "w"}
	body := fetchBodyB(b, ref)
	var peakRSS, peakHeap int64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss0, heap0 := rssKB(), int64(ms.HeapInuse)
		var maxRSS atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if v := rssKB(); v > maxRSS.Load() {
						maxRSS.Store(v)
					}
				}
			}
		}()
		req, _ := http.NewRequest(http.MethodPost, p.URL()+"/sql/1.0/warehouses/w", bytes.NewReader(body))
		req.Header.Set("Content-Type", thrift.ContentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		runtime.ReadMemStats(&ms)
		close(stop)
		<-done
		if err != nil || n < size {
			b.Fatalf("streamed %d bytes: %v", n, err)
		}
		peakRSS = max(peakRSS, maxRSS.Load()-rss0)
		peakHeap = max(peakHeap, int64(ms.HeapInuse)-heap0)
		b.SetBytes(n)
	}
	b.ReportMetric(float64(peakRSS)/1024, "rss-growth-MB")
	b.ReportMetric(float64(peakHeap)/(1<<20), "heap-growth-MB")
	if st := p.Stats(); st.Calls["FetchResults"] == 0 {
		b.Fatalf("the proxy did not see the FetchResults: %+v", st)
	}
}

func fetchBodyB(b *testing.B, ref sources.Ref) []byte {
	h, err := thrift.OperationHandle(ref)
	if err != nil {
		b.Fatal(err)
	}
	return encodeFetch(h)
}

// BenchmarkProxySelectOne runs b.N statements of SELECT 1 (execute,
// status, fetch, close) from 4 clients through the proxy, or direct with
// DBXTOP_PROXY_LOAD_DIRECT=1, and reports statements per second and the
// process's CPU time per statement (proxy, simulator and clients share
// the process): the proxy's per-RPC cost, side by side.
func BenchmarkProxySelectOne(b *testing.B) {
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioQuiet, Seed: 7, Retention: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	host := s.URL()
	if os.Getenv("DBXTOP_PROXY_LOAD_DIRECT") == "" {
		p, err := Start(context.Background(), Options{Upstream: s.URL(), Heal: true, RetainFinished: 30 * time.Second},
			ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(context.Background())
		host = p.URL()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int64
	b.ResetTimer()
	t0 := time.Now()
	c0, _ := cpuTime()
	wg := selectOneLoad(ctx, b, host, s.Token(), s.WarehouseIDs()[0], 4, &done)
	for done.Load() < int64(b.N) {
		time.Sleep(5 * time.Millisecond)
	}
	n := done.Load()
	c1, ok := cpuTime()
	elapsed := time.Since(t0)
	b.StopTimer()
	cancel()
	wg.Wait()
	b.ReportMetric(float64(n)/elapsed.Seconds(), "statements/s")
	if ok {
		b.ReportMetric(float64((c1-c0).Microseconds())/float64(n), "cpu-µs/statement")
	}
}
