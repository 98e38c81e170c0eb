package sim

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// demoDeadline bounds each wait of the demo tests: the compressed demo
// reaches each of them in a few seconds at rest, and a loaded machine
// (load average 15 on 2 cores) may take many times that; the waits end
// as soon as the condition holds.
const demoDeadline = 90 * time.Second

// TestDemoScenario runs the demo cast 30× faster than real time and checks
// each simulated client shows up in the ground truth as what it is. The
// demo's scripted windows, which a loaded machine could step over, are
// checked on a manual clock by TestDemoObserverFaults.
func TestDemoScenario(t *testing.T) {
	// StatementAPIForThrift: the outage's REST leg is read through GetStatement on Thrift-run statements.
	s := startSim(t, Options{Scenario: ScenarioDemo, Speed: 30, ReapEvery: 50 * time.Millisecond, StatementAPIForThrift: true})
	// Demo timeouts follow the speed: 90 s / 30 and 150 s / 30.
	if s.o.IdleTimeout != 3*time.Second || s.o.LeakTimeout != 5*time.Second {
		t.Fatalf("timeouts %v %v", s.o.IdleTimeout, s.o.LeakTimeout)
	}
	kinds := func(tr Truth, pred func(TruthOperation) bool) map[string]int {
		m := map[string]int{}
		for _, op := range tr.Operations {
			if pred(op) {
				m[op.ClientKind]++
			}
		}
		return m
	}
	eventually(t, demoDeadline, "healthy, abandoned and leaked operations", func() bool {
		tr := getTruth(t, s)
		k := kinds(tr, func(op TruthOperation) bool { return true })
		leaked := kinds(tr, func(op TruthOperation) bool { return op.State == "FINISHED" && op.Open })
		live := kinds(tr, func(op TruthOperation) bool { return model.State(op.State).Live() })
		return k[KindHealthy] > 0 && live[KindAbandons] > 0 && leaked[KindCloseFails] > 0
	})
	// The abandons client's poll and the close_fails client's close each
	// meet a reset (the abandons one may come after its statement shows).
	eventually(t, demoDeadline, "a reset for the abandons poll and the close_fails close", func() bool {
		return s.Stats().Faults["reset"] >= 2
	})

	// The abandoned operation is reaped for inactivity; the ingest client
	// fills its endpoint.
	eventually(t, demoDeadline, "a reaped orphan", func() bool {
		for _, op := range getTruth(t, s).Operations {
			if op.ClientKind == KindAbandons && op.ErrorMessage == InactivityMessage {
				return true
			}
		}
		return false
	})
	// The ingest client keeps filling its endpoint (at speed 1 it is full at
	// ~61 s; on a loaded machine the compressed run may not get that far,
	// and the refusal itself is covered by TestUpsertFillsEndpointToResourceExhausted).
	eventually(t, demoDeadline, "the ingest client to fill most of its endpoint", func() bool {
		for _, e := range getTruth(t, s).Endpoints {
			if e.Name == IngestEndpoint && e.Rows >= 120_000 {
				return true
			}
		}
		return false
	})
	if n := s.Stats().Requests["UpsertDataVectorIndex"]; n < 3 {
		t.Errorf("%d upserts", n)
	}
}

// TestDemoObserverFaults: the demo's scripted faults against the observer
// (dbxtop's own calls), on a manual clock so that no window can be
// stepped over by a slow machine. From 40 s to 65 s of the timeline
// (1.33 s to 2.17 s at 30×) warehouse 0 refuses the observer's Thrift
// calls, its Statement Execution API calls on warehouse 0's statements and
// its query-history requests with 503, and nothing else; the observer's
// closes of a close_fails operation fail with 503 for observerCloseFailFor
// (scaled) after the first, immediate retries included, and then succeed.
func TestDemoObserverFaults(t *testing.T) {
	clk := NewManualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := startSim(t, Options{Scenario: ScenarioDemo, Speed: 30, ReapEvery: 50 * time.Millisecond,
		StatementAPIForThrift: true, Clock: clk})
	ctx := context.Background()
	obs := thriftClient(t, s, "dbxtop/0.1.0")
	whs := s.WarehouseIDs()
	// The long healthy statements run from t=0 on warehouses 0 and 1.
	stmtOn := map[string]string{}
	eventually(t, demoDeadline, "the long statements", func() bool {
		for _, op := range getTruth(t, s).Operations {
			stmtOn[op.WarehouseID] = op.StatementID
		}
		return stmtOn[whs[0]] != "" && stmtOn[whs[1]] != ""
	})
	hc := httpClient(t)
	restStatus := func(wh int) int {
		return mustDo(t, hc, "GET", s.URL()+"/api/2.0/sql/statements/"+stmtOn[whs[wh]], s.Token(), "dbxtop/0.1.0", "").status
	}
	historyStatus := func() int {
		return mustDo(t, hc, "GET", s.URL()+"/api/2.0/sql/history/queries", s.Token(), "dbxtop/0.1.0", "").status
	}
	openOn := func(wh int) error { _, err := obs.OpenSession(ctx, whs[wh]); return err }
	var he *sources.HTTPError
	check := func(when string, inOutage bool) {
		t.Helper()
		want := http.StatusOK
		if inOutage {
			want = http.StatusServiceUnavailable
		}
		if st := restStatus(0); st != want {
			t.Errorf("%s: GetStatement on warehouse 0: HTTP %d, want %d", when, st, want)
		}
		if st := historyStatus(); st != want {
			t.Errorf("%s: ListQueries: HTTP %d, want %d", when, st, want)
		}
		err := openOn(0)
		if refused := errors.As(err, &he) && he.StatusCode == http.StatusServiceUnavailable; refused != inOutage || (!inOutage && err != nil) {
			t.Errorf("%s: observer OpenSession on warehouse 0: %v (outage: %v)", when, err, inOutage)
		}
		if st := restStatus(1); st != http.StatusOK {
			t.Errorf("%s: GetStatement on warehouse 1: HTTP %d; the outage is for warehouse 0 only", when, st)
		}
		if err := openOn(1); err != nil {
			t.Errorf("%s: observer OpenSession on warehouse 1: %v; the outage is for warehouse 0 only", when, err)
		}
	}
	check("before the outage (t=0)", false)
	clk.Advance(1500 * time.Millisecond)
	check("during the outage (t=45 s of the timeline)", true)
	clk.Advance(time.Second)
	check("after the outage (t=75 s of the timeline)", false)

	// A close_fails operation finished and left open by its client.
	var ref sources.Ref
	eventually(t, demoDeadline, "a finished close_fails operation left open", func() bool {
		for _, op := range getTruth(t, s).Operations {
			if op.ClientKind == KindCloseFails && op.Open && op.State == "FINISHED" {
				ref = sources.Ref{StatementID: op.StatementID, WarehouseID: op.WarehouseID}
				return true
			}
		}
		clk.Advance(50 * time.Millisecond) // its 4 s run (0.13 s here) ends on the clock
		return false
	})
	if err := obs.CloseOperation(ctx, ref); !(errors.As(err, &he) && he.StatusCode == 503) {
		t.Errorf("first observer close of a close_fails op: %v, want 503", err)
	}
	if err := obs.CloseOperation(ctx, ref); !(errors.As(err, &he) && he.StatusCode == 503) {
		t.Errorf("an immediate retry of the observer close: %v, want 503 too", err)
	}
	clk.Advance(observerCloseFailFor/30 + 100*time.Millisecond)
	if err := obs.CloseOperation(ctx, ref); err != nil && !errors.Is(err, sources.ErrHandleGone) {
		t.Errorf("an observer close after the fault window: %v, want it closed", err)
	}
}
