package tui

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
)

// memSource is an in-memory workspace of n running operations with the
// fields a query-history answer carries (strings freshly allocated, as a
// JSON decode would). With activity, every owning client was last active
// an hour ago, so every operation is flagged INACTIVE (the heaviest
// snapshot: every view shows running durations and is re-evaluated on
// every refresh); without, the source cannot tell client activity (query
// history) and no operation is flagged (the common case: views are
// shared between refreshes until something changes).
type memSource struct {
	n        int
	start    time.Time
	activity bool
}

func (s *memSource) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	ds := make([]sources.Discovered, s.n)
	for i := range ds {
		id := fmt.Sprintf("01f0c2a4-%04x-4%03x-8000-%012x", i>>16&0xffff, i&0xfff, i)
		ds[i] = sources.Discovered{
			Op: model.Operation{StatementID: id, WarehouseID: "4b9f2c1d7e3a5b60",
				User: fmt.Sprintf("user%04d@example.com", i%5000), ClientApplication: "Databricks JDBC Driver",
				SQL: fmt.Sprintf("SELECT o.order_id, o.customer_id, SUM(l.amount) AS total FROM sales.orders o "+
					"JOIN sales.lines l ON l.order_id = o.order_id WHERE o.region = 'r%d' GROUP BY 1, 2", i),
				State: model.StateRunning, StartedAt: s.start},
			Ref: sources.Ref{StatementID: id, WarehouseID: "4b9f2c1d7e3a5b60"},
		}
	}
	return ds, nil
}

func (s *memSource) Status(context.Context, sources.Ref) (sources.Status, error) {
	open := true
	st := sources.Status{State: model.StateRunning, StartedAt: s.start, Open: &open}
	if s.activity {
		last := s.start
		st.ClientLastActivity = &last
	}
	return st, nil
}

func (s *memSource) BatchLimit() int { return 1000 }

func (s *memSource) StatusBatch(_ context.Context, refs []sources.Ref) (map[string]sources.Status, error) {
	out := make(map[string]sources.Status, len(refs))
	for _, r := range refs {
		out[r.StatementID] = sources.Status{State: model.StateRunning, StartedAt: s.start}
	}
	return out, nil
}

// followedEngine is a real engine that has discovered and polled n
// operations once (RunOnce), every one flagged.
func followedEngine(tb testing.TB, n int) *poller.Engine {
	return followedEngineFlagged(tb, n, true)
}

// followedEngineFlagged is followedEngine with every operation flagged
// (flagged) or none.
func followedEngineFlagged(tb testing.TB, n int, flagged bool) *poller.Engine {
	tb.Helper()
	src := &memSource{n: n, start: time.Now().Add(-time.Hour), activity: flagged}
	e := poller.NewEngine(poller.Options{Discoverer: src, Status: src, ReadOnly: true,
		Thresholds: model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 2 * time.Hour, LeakAfter: 2 * time.Minute}})
	if err := e.RunOnce(context.Background()); err != nil {
		tb.Fatal(err)
	}
	for range len(e.Events()) {
		<-e.Events()
	}
	return e
}

// BenchmarkRefreshEngineSnapshotTUIRebuildFrame times one refresh as the
// TUI does it each tick: the engine's snapshot (views re-evaluated where
// due, order), the TUI's rebuild (filter, sort, cursor) and one frame of
// the Operations view at 120×40, over a real engine following n
// operations, every one flagged (flagged=all) or none (flagged=none).
func BenchmarkRefreshEngineSnapshotTUIRebuildFrame(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, flagged := range []bool{true, false} {
			b.Run(fmt.Sprintf("ops=%d/flagged=%s", n, allOrNone(flagged)), func(b *testing.B) {
				benchRefresh(b, n, flagged)
			})
		}
	}
}

func allOrNone(all bool) string {
	if all {
		return "all"
	}
	return "none"
}

func benchRefresh(b *testing.B, n int, flagged bool) {
	e := followedEngineFlagged(b, n, flagged)
	m := newModel(e, testOptions())
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(m.fetch()())
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		m.Update(m.fetch()()) // renders the frame: a snapshot is visible
		_ = m.View()
	}
	// The process's CPU time a refresh (GC included): on a shared
	// machine it moves less with the neighbours than ns/op does.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEngineSnapshot times the engine's part of a refresh alone:
// Engine.Snapshot over n followed operations, every one flagged.
func BenchmarkEngineSnapshot(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			e := followedEngine(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = e.Snapshot()
			}
		})
	}
}

// BenchmarkHeapPerOperationEngineTUISnapshot measures the live heap per
// followed operation, everything included: the engine's state, the TUI's
// copy (its snapshot and row order) and one more retained snapshot (what
// an export or the next refresh holds), every operation flagged
// (flagged=all: the two snapshots hold different views) or none. One
// iteration per size; the figure is the B/op-followed metric.
func BenchmarkHeapPerOperationEngineTUISnapshot(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, flagged := range []bool{true, false} {
			b.Run(fmt.Sprintf("ops=%d/flagged=%s", n, allOrNone(flagged)), func(b *testing.B) {
				benchHeap(b, n, flagged)
			})
		}
	}
}

func benchHeap(b *testing.B, n int, flagged bool) {
	var per float64
	for b.Loop() {
		before := liveHeap()
		e := followedEngineFlagged(b, n, flagged)
		m := newModel(e, testOptions())
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		m.Update(m.fetch()())
		retained := e.Snapshot()
		after := liveHeap()
		per = float64(after-before) / float64(n)
		runtime.KeepAlive(m)
		runtime.KeepAlive(retained)
		runtime.KeepAlive(e)
	}
	b.ReportMetric(per, "B/op-followed")
}

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestRefreshCostShape asserts the refresh's scaling shape from
// allocations, which do not depend on the machine's speed: a refresh
// (engine snapshot, TUI rebuild, one frame) allocates per operation at
// 10,000 operations no more than 1.2× what it does at 1,000 — linear at
// worst, never worse — and a frame alone does not grow at all
// (TestFrameCostDoesNotGrowWithOperations).
func TestRefreshCostShape(t *testing.T) {
	perOp := func(n int) (allocs, bytes float64) {
		e := followedEngine(t, n)
		m := newModel(e, testOptions())
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		m.Update(m.fetch()())
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		const rounds = 3
		for range rounds {
			m.Update(m.fetch()())
			_ = m.View()
		}
		runtime.ReadMemStats(&ms1)
		return float64(ms1.Mallocs-ms0.Mallocs) / float64(rounds*n), float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(rounds*n)
	}
	a1, b1 := perOp(1000)
	a10, b10 := perOp(10000)
	t.Logf("per operation per refresh: %.1f allocs, %.0f B at 1,000; %.1f allocs, %.0f B at 10,000", a1, b1, a10, b10)
	if a10 > a1*1.2 || b10 > b1*1.2 {
		t.Errorf("refresh cost per operation grows with operations: %.1f allocs / %.0f B at 1,000, %.1f / %.0f at 10,000", a1, b1, a10, b10)
	}
}

// TestRefreshSharesUnchangedViews: with nothing flagged and nothing
// changed, a refresh copies pointers to shared views (copy-on-write): its
// allocations are the same at 10,000 operations as at 1,000 (the frame,
// the row order, a few slices), not one or more per operation.
func TestRefreshSharesUnchangedViews(t *testing.T) {
	perRefresh := func(n int) float64 {
		e := followedEngineFlagged(t, n, false)
		m := newModel(e, testOptions())
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		m.Update(m.fetch()())
		return testing.AllocsPerRun(3, func() { m.Update(m.fetch()()) })
	}
	a1, a10 := perRefresh(1000), perRefresh(10000)
	t.Logf("allocations per refresh, nothing flagged: %.0f at 1,000, %.0f at 10,000", a1, a10)
	if a10 > a1*1.2+50 {
		t.Errorf("a refresh allocates per operation although no view changed: %.0f at 1,000, %.0f at 10,000", a1, a10)
	}
}
