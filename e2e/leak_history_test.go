package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestSnapshotFlagsALeakWhoseEndCameFromHistory: a client runs a statement
// to its end and never closes it. A one-shot `snapshot` learns the end from
// query history (its batch listing), which tells no openness; the operation
// ended --leak-after ago, so the same round asks its openness and flags it
// UNCLOSED. Before, only an end reported over Thrift led to that question,
// so a snapshot missed such leaks. Openness can be known here only because
// the simulator is explicitly lenient; on a strict server only the proxy
// would tell (TestStrictServerOpennessIsUnknown).
func TestSnapshotFlagsALeakWhoseEndCameFromHistory(t *testing.T) {
	t.Parallel()
	budget(t)
	// Lenient handles: the leak is seen through rebuilt handles, not the proxy.
	srv := startSimServer(t, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1, LenientHandles: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	owner, sess := leakyOwner(ctx, t, srv)
	// More statements than the engine's first activity probes (which poll
	// a few new operations on their own): the rest are known only from
	// the listings.
	ids := leakEnded(ctx, t, owner, sess, 8)
	ended := time.Now()
	s, r := snapshotPastLeakAfter(t, srv, ended)
	found := 0
	for _, v := range s.Operations {
		if !slices.Contains(ids, v.StatementID) {
			continue
		}
		found++
		kinds := make([]model.FlagKind, 0, len(v.Flags))
		for _, f := range v.Flags {
			kinds = append(kinds, f.Kind)
		}
		if !slices.Contains(kinds, model.FlagUnclosed) || v.Open == nil || !*v.Open {
			t.Errorf("leaked operation %s (ended %s or more before the snapshot): flags %v, open %v, status from %q, want UNCLOSED and open",
				v.StatementID, s.GeneratedAt.Sub(ended).Round(time.Millisecond), kinds, v.Open, v.StatusSource)
		}
	}
	if found != len(ids) {
		t.Fatalf("%d of the %d leaked operations are in the snapshot:\n%s", found, len(ids), r.stdout)
	}
	if r.code != 1 && r.code != 2 {
		t.Errorf("exit %d with UNCLOSED operations, want 1 or 2", r.code)
	}
}

// snapshotPastLeakAfter waits until --leak-after (2 s) has passed since
// ended, then takes `dbxtop snapshot --json` of srv with it.
func snapshotPastLeakAfter(t *testing.T, srv *sim.Server, ended time.Time) (model.Snapshot, result) {
	t.Helper()
	const leakAfter = 2 * time.Second
	time.Sleep(time.Until(ended.Add(leakAfter + 500*time.Millisecond))) // the threshold itself is what is tested
	r := run(t, runOpts{args: []string{"snapshot", "--json", "--host", srv.URL(), "--leak-after", leakAfter.String()},
		env: []string{"DATABRICKS_TOKEN=" + srv.Token()}, timeout: 30 * time.Second})
	var s model.Snapshot
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("exit %d: %v\nstdout %s\nstderr %s", r.code, err, r.stdout, r.stderr)
	}
	return s, r
}

// leakyOwner is the leaky client's Thrift connection and session on
// the first warehouse of srv.
func leakyOwner(ctx context.Context, t *testing.T, srv *sim.Server) (*thrift.Client, thrift.Session) {
	t.Helper()
	owner, err := thrift.NewClient(thrift.Options{Host: srv.URL(), Token: srv.Token(), UserAgent: "LeakyDriver/1.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.CloseIdleConnections)
	sess, err := owner.OpenSession(ctx, srv.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	return owner, sess
}

// leakEnded runs n statements in sess as a leaky client does: it waits
// for each to end, then walks away without CloseOperation. It returns
// their statement ids.
func leakEnded(ctx context.Context, t *testing.T, owner *thrift.Client, sess thrift.Session, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		op, err := owner.Execute(ctx, sess, "SELECT 1", false)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, op.Ref.StatementID)
		for {
			st, err := owner.GetOperationStatus(ctx, op.Ref)
			if err != nil {
				t.Fatal(err)
			}
			if st.State.Terminal() {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal("the statement never ended")
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return ids
}
