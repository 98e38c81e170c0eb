package poller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Snapshots share views (docs/performance.md, "Incremental snapshots"):
// a snapshot taken while nothing changed holds the very views of the one
// before, and when one operation changes only its view is new. The
// shared views are never written: the first snapshot still reads as it
// did.
func TestSnapshotsShareUnchangedViews(t *testing.T) {
	w := newMemWorkspace(100)
	for _, id := range []string{"a", "b", "c"} {
		w.set(id, model.StateRunning)
	}
	clk := newFakeClock()
	e := NewEngine(Options{Discoverer: w, Status: w, Clock: clk,
		Thresholds: model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 10 * time.Minute, LeakAfter: 2 * time.Minute}})
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	byID := func(s model.Snapshot) map[string]*model.OperationView {
		m := map[string]*model.OperationView{}
		for _, v := range s.Operations {
			m[v.StatementID] = v
		}
		return m
	}
	s1 := byID(e.Snapshot())
	clk.Advance(10 * time.Second) // nothing due: no deadline within a minute
	s2 := byID(e.Snapshot())
	for id, v := range s1 {
		if s2[id] != v {
			t.Errorf("%s: a new view although nothing changed", id)
		}
	}
	w.set("b", model.StateFinished)
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	s3 := byID(e.Snapshot())
	if s3["b"] == s2["b"] || s3["b"].State != model.StateFinished {
		t.Errorf("b changed (FINISHED) but its view did not: %v", s3["b"].State)
	}
	if s2["b"].State != model.StateRunning {
		t.Errorf("the earlier snapshot's view was written: b reads %v", s2["b"].State)
	}
	// a and c were confirmed again by this round (last poll ok moved), so
	// they are new views too; with nothing changed at all they are not.
	clk.Advance(5 * time.Second)
	s4 := byID(e.Snapshot())
	for id, v := range s3 {
		if s4[id] != v {
			t.Errorf("%s: a new view after a quiet 5 s", id)
		}
	}
	// At the STALE deadline (a minute without a confirmation) the views
	// are re-evaluated and carry the flag.
	clk.Advance(time.Minute)
	s5 := byID(e.Snapshot())
	if s5["a"] == s4["a"] || !s5["a"].HasFlag(model.FlagStale) {
		t.Errorf("past the STALE deadline a's view is not re-evaluated: flags %v", s5["a"].Flags)
	}
}

// Operations that arrive in any id order across rounds are listed in the
// snapshot most severe first, then by statement id, exactly as a full
// sort would list them: the engine merges new ones into its id order
// instead of sorting every operation per refresh.
func TestSnapshotOrderWithOperationsArrivingOutOfOrder(t *testing.T) {
	w := newMemWorkspace(100)
	e := NewEngine(Options{Discoverer: w, Status: w, ReadOnly: true})
	for round, ids := range [][]int{{50, 70}, {10, 60, 90}, {5, 55, 95, 20}, {1}} {
		for _, n := range ids {
			w.set(opID(n), model.StateRunning)
		}
		if err := e.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		snap := e.Snapshot()
		got := snap.Operations
		want := slices.Clone(got)
		model.SortOperations(want, model.SortSeverity, true)
		if !slices.Equal(got, want) || !snap.Ordered() {
			t.Fatalf("round %d: snapshot order %v, sorted %v", round, opIDs(got), opIDs(want))
		}
		if !slices.IsSortedFunc(got, func(a, b *model.OperationView) int { return strings.Compare(a.StatementID, b.StatementID) }) {
			t.Fatalf("round %d: not in statement id order: %v", round, opIDs(got))
		}
	}
}

func opIDs(vs []*model.OperationView) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.StatementID)
	}
	return out
}
