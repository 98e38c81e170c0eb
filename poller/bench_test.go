package poller

import (
	"context"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// memSource answers in-process (no network), to measure the engine alone.
type memSource struct{ ds []sources.Discovered }

func newMemSource(n int) *memSource {
	m := &memSource{ds: make([]sources.Discovered, n)}
	start := newFakeClock().Now().Add(-time.Hour)
	for i := range m.ds {
		id := opID(i)
		m.ds[i] = sources.Discovered{Op: model.Operation{StatementID: id, WarehouseID: "wh1", State: model.StateRunning, StartedAt: start},
			Ref: sources.Ref{StatementID: id, WarehouseID: "wh1"}}
	}
	return m
}

func (m *memSource) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	return m.ds, nil
}

func (m *memSource) Status(context.Context, sources.Ref) (sources.Status, error) {
	open := true
	return sources.Status{State: model.StateRunning, Open: &open}, nil
}

// BenchmarkEnginePoll: engine overhead per status poll with 10,000
// followed operations (policy, bookkeeping, scheduling, one discovery
// merge and one flag evaluation per round), the source answering in-process.
func BenchmarkEnginePoll(b *testing.B) {
	const n = 10000
	src := newMemSource(n)
	e := NewEngine(Options{Discoverer: src, Status: src, Clock: newFakeClock(), MaxInFlight: 16})
	ctx := context.Background()
	if err := e.RunOnce(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := e.RunOnce(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/poll")
	if h := e.Health(); h.Followed != n || h.Polls < int64(n*(b.N+1)) {
		b.Fatalf("health %+v", h)
	}
}

// BenchmarkSnapshot10k: one consistent snapshot (flags evaluated) of
// 10,000 operations, what the TUI asks for on every refresh.
func BenchmarkSnapshot10k(b *testing.B) {
	src := newMemSource(10000)
	e := NewEngine(Options{Discoverer: src, Status: src, Clock: newFakeClock()})
	if err := e.RunOnce(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s := e.Snapshot(); len(s.Operations) != 10000 {
			b.Fatal(len(s.Operations))
		}
	}
}
