package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestSnapshotFlagsALeakThatEndedLongBeforeItStarted: an operator starts
// dbxtop mid-incident, twenty minutes after a leaky client walked away
// from its ended statements. A one-shot `snapshot` asks their openness on
// its first round and flags them UNCLOSED: an operation is never retired
// unasked because it ended long ago (the window in which its openness is
// asked counts from when dbxtop first could ask). The simulator's clock
// runs twenty minutes behind, so the leaks are old without waiting, and
// it stands still, so its reapers do not close them.
func TestSnapshotFlagsALeakThatEndedLongBeforeItStarted(t *testing.T) {
	t.Parallel()
	budget(t)
	clk := sim.NewManualClock(time.Now().Add(-20 * time.Minute))
	srv := startSimServer(t, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1, LenientHandles: true, Clock: clk})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	owner, sess := leakyOwner(ctx, t, srv)
	ids := leakEndedOn(ctx, t, clk, owner, sess, 3)
	s, r := snapshotPastLeakAfter(t, srv, time.Now())
	found := 0
	for _, v := range s.Operations {
		if !slices.Contains(ids, v.StatementID) {
			continue
		}
		found++
		if !v.HasFlag(model.FlagUnclosed) || v.Open == nil || !*v.Open {
			t.Errorf("operation %s, ended %s before the snapshot and still open: flags %+v, open %v, status from %q; want UNCLOSED and open",
				v.StatementID, s.GeneratedAt.Sub(v.CompletedAt).Round(time.Second), v.Flags, v.Open, v.StatusSource)
		}
	}
	if found != len(ids) {
		t.Fatalf("%d of the %d leaked operations are in the snapshot:\n%s", found, len(ids), r.stdout)
	}
}

// leakEndedOn is leakEnded on a simulator whose clock the test moves: it
// moves it a second at a time until each statement ends.
func leakEndedOn(ctx context.Context, t *testing.T, clk *sim.ManualClock, owner *thrift.Client, sess thrift.Session, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		op, err := owner.Execute(ctx, sess, "SELECT 1", false)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, op.Ref.StatementID)
		for i := 0; ; i++ {
			st, err := owner.GetOperationStatus(ctx, op.Ref)
			if err != nil {
				t.Fatal(err)
			}
			if st.State.Terminal() {
				break
			}
			if i > 600 {
				t.Fatal("the statement never ended")
			}
			clk.Advance(time.Second)
		}
	}
	return ids
}
