package tui

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
)

// bigSnapshot has n operations, one in ten flagged.
func bigSnapshot(n int) model.Snapshot {
	s := fixtureSnapshot()
	ops := make([]*model.OperationView, n)
	for i := range ops {
		op := &model.OperationView{Operation: &model.Operation{
			StatementID: fmt.Sprintf("01ef%04x-%04x-4000-8000-%012x", i>>16, i&0xffff, i),
			WarehouseID: fmt.Sprintf("wh-%d", i%4), User: fmt.Sprintf("user%d@example.com", i%97),
			State: model.StateRunning, StartedAt: fixedNow.Add(-time.Duration(i%3600) * time.Second),
			SQL: "SELECT * FROM range(1000000) WHERE id % 7 = 0", ClientActivityKnown: true,
		}, InactiveFor: dur(time.Duration(i%400) * time.Second), ReapedIn: dur(time.Duration(430-i%400) * time.Second)}
		if i%10 == 0 {
			op.Flags = []model.Flag{{Kind: model.FlagInactive, Severity: model.SeverityWarning, Detail: "idle"}}
		}
		ops[i] = op
	}
	s.Operations = ops
	return s
}

// BenchmarkFrameOperationsView120x40 times one frame (View) of the
// Operations view at 120×40 with the cursor mid-table: only the visible
// rows are built, so the cost must not grow with the number of operations.
func BenchmarkFrameOperationsView120x40(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			e := newFakeEngine(bigSnapshot(n))
			m := newModel(e, testOptions())
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			m.Update(m.fetch()())
			m.ops.moveCursor(n / 2) // mid-table: the window is sliced, not scanned
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = m.render()
			}
		})
	}
}

// BenchmarkTUIRebuildRowsFromSnapshot times the TUI's part of a refresh
// alone: applying one snapshot (filter, sort, cursor lookup), once per
// refresh, not per frame, and O(n log n).
func BenchmarkTUIRebuildRowsFromSnapshot(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			s := bigSnapshot(n)
			m := newModel(newFakeEngine(s), testOptions())
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				m.applySnapshot(s, fixtureHealth())
			}
		})
	}
}

func TestFrameCostDoesNotGrowWithOperations(t *testing.T) {
	// Allocations are deterministic where time is not: a frame over
	// 100,000 operations allocates like one over 1,000.
	allocs := func(n int) float64 {
		m := newModel(newFakeEngine(bigSnapshot(n)), testOptions())
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		m.Update(m.fetch()())
		return testing.AllocsPerRun(5, func() { _ = m.render() })
	}
	small, large := allocs(1000), allocs(100000)
	must(t, large <= small*1.1+10, "frame allocations grow with operations: %v at 1k, %v at 100k", small, large)
}
