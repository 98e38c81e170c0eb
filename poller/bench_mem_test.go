package poller

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// realisticSource discovers n operations with the fields a query-history
// answer carries (user, client application, a ~150-byte SQL text), each
// string freshly allocated on every call, as a JSON decode would: the
// engine keeps what it needs and the source keeps nothing, so the heap
// the engine holds is exactly what following costs.
type realisticSource struct {
	n     int
	start time.Time
}

func (s *realisticSource) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	ds := make([]sources.Discovered, s.n)
	for i := range ds {
		id := fmt.Sprintf("01f0c2a4-%04x-4%03x-8000-%012x", i>>16&0xffff, i&0xfff, i)
		ds[i] = sources.Discovered{
			Op: model.Operation{
				StatementID:       id,
				WarehouseID:       "4b9f2c1d7e3a5b60",
				User:              fmt.Sprintf("user%04d@example.com", i%5000),
				ClientApplication: "Databricks JDBC Driver",
				SQL: fmt.Sprintf("SELECT o.order_id, o.customer_id, SUM(l.amount) AS total FROM sales.orders o "+
					"JOIN sales.lines l ON l.order_id = o.order_id WHERE o.region = 'r%d' GROUP BY 1, 2", i),
				State:     model.StateRunning,
				StartedAt: s.start,
			},
			Ref: sources.Ref{StatementID: id, WarehouseID: "4b9f2c1d7e3a5b60"},
		}
	}
	return ds, nil
}

func (s *realisticSource) Status(context.Context, sources.Ref) (sources.Status, error) {
	open := true
	last := s.start.Add(59 * time.Minute)
	return sources.Status{State: model.StateRunning, StartedAt: s.start, Open: &open, ClientLastActivity: &last}, nil
}

// heapInUse is the live heap after two full collections.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkFollowedOperationMemory measures issue 9 item 5: the heap the
// engine holds per followed operation (goal < 2 KB) at 10,000 and 100,000
// operations. Each iteration builds an engine, discovers and polls every
// operation once (RunOnce: the entry, its heap slot, its flag state and
// its observed status are all in place), drains the event stream as the
// TUI would, and measures the heap after GC against the heap before.
//
//	go test -run '^$' -bench FollowedOperationMemory -benchtime 1x ./poller/
func BenchmarkFollowedOperationMemory(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			var perOp float64
			for b.Loop() {
				src := &realisticSource{n: n, start: newFakeClock().Now().Add(-time.Hour)}
				before := heapInUse()
				e := NewEngine(Options{Discoverer: src, Status: src, Clock: newFakeClock()})
				if err := e.RunOnce(context.Background()); err != nil {
					b.Fatal(err)
				}
				drain(e)
				after := heapInUse()
				if h := e.Health(); h.Followed != n || h.Polls != int64(n) {
					b.Fatalf("engine follows %d operations after %d polls, want %d and %d", h.Followed, h.Polls, n, n)
				}
				perOp = float64(int64(after)-int64(before)) / float64(n)
				runtime.KeepAlive(e)
			}
			b.ReportMetric(perOp, "heap-B/op-followed")
		})
	}
}

// drain empties the event stream, as the TUI's reader does.
func drain(e *Engine) {
	for {
		select {
		case <-e.Events():
		default:
			return
		}
	}
}

// TestFollowedOperationMemoryBound keeps item 5 from regressing in the
// normal suite: with 10,000 operations the engine holds under 2 KB each.
// Heap figures are deterministic enough for a bound with room (the
// benchmark reports the exact figure).
func TestFollowedOperationMemoryBound(t *testing.T) {
	const n = 10_000
	src := &realisticSource{n: n, start: newFakeClock().Now().Add(-time.Hour)}
	before := heapInUse()
	e := NewEngine(Options{Discoverer: src, Status: src, Clock: newFakeClock()})
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	drain(e)
	after := heapInUse()
	perOp := float64(int64(after)-int64(before)) / n
	if e.Health().Followed != n {
		t.Fatalf("followed %d, want %d", e.Health().Followed, n)
	}
	// The SQL text alone is ~150 bytes: a figure below it means the
	// measurement is broken, not that the engine is frugal.
	if perOp < 150 || perOp >= 2048 {
		t.Fatalf("heap per followed operation = %.0f B, want within [150, 2048)", perOp)
	}
	t.Logf("heap per followed operation at %d: %.0f B", n, perOp)
	if s := e.Snapshot(); !strings.Contains(s.Operations[0].SQL, "sales.orders") {
		t.Fatalf("snapshot lost the SQL text: %q", s.Operations[0].SQL)
	}
	runtime.KeepAlive(e)
}
