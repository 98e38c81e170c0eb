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

// TestDemoScenario runs the demo cast 30× faster than real time and checks
// each simulated client shows up in the ground truth as what it is.
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
	// The observer outage: warehouse 0 answers dbxtop/ calls with 503 from
	// 40 s to 65 s (1.33 s to 2.17 s here), then serves them again.
	ctx := context.Background()
	obs := thriftClient(t, s, "dbxtop/0.1.0")
	var he *sources.HTTPError
	saw503, recovered := false, false
	// The outage covers the observer's Statement Execution API calls on
	// warehouse 0's statements too (a status poll's fallback), and only
	// those: the long healthy statements run from t=0 on warehouses 0, 1.
	stmtOn := map[string]string{}
	eventually(t, 2*time.Second, "the long statements", func() bool {
		for _, op := range getTruth(t, s).Operations {
			stmtOn[op.WarehouseID] = op.StatementID
		}
		return stmtOn[s.WarehouseIDs()[0]] != "" && stmtOn[s.WarehouseIDs()[1]] != ""
	})
	hc := httpClient(t)
	restStatus := func(wh int) int {
		return mustDo(t, hc, "GET", s.URL()+"/api/2.0/sql/statements/"+stmtOn[s.WarehouseIDs()[wh]], s.Token(), "dbxtop/0.1.0", "").status
	}
	restSaw503 := false
	eventually(t, 6*time.Second, "the observer outage on warehouse 0 to come and go", func() bool {
		if restStatus(0) == http.StatusServiceUnavailable {
			restSaw503 = true
		}
		if st := restStatus(1); st != http.StatusOK {
			t.Fatalf("GetStatement on warehouse 1: HTTP %d, the outage is for warehouse 0 only", st)
		}
		_, err := obs.OpenSession(ctx, s.WarehouseIDs()[0])
		switch {
		case errors.As(err, &he) && he.StatusCode == http.StatusServiceUnavailable:
			saw503 = true
		case err == nil && saw503:
			recovered = true
		case err != nil:
			t.Fatalf("observer OpenSession: %v", err)
		}
		return recovered
	})
	if _, err := obs.OpenSession(ctx, s.WarehouseIDs()[1]); err != nil {
		t.Errorf("the outage is for warehouse 0 only: %v", err)
	}
	if !restSaw503 {
		t.Error("the observer's GetStatement on warehouse 0 was never refused during the outage")
	}

	var closeFailsID string
	eventually(t, 8*time.Second, "healthy, abandoned and leaked operations", func() bool {
		tr := getTruth(t, s)
		k := kinds(tr, func(op TruthOperation) bool { return true })
		leaked := kinds(tr, func(op TruthOperation) bool { return op.State == "FINISHED" && op.Open })
		live := kinds(tr, func(op TruthOperation) bool { return model.State(op.State).Live() })
		for _, op := range tr.Operations {
			if op.ClientKind == KindCloseFails && op.Open && op.State == "FINISHED" {
				closeFailsID = op.StatementID
			}
		}
		return k[KindHealthy] > 0 && live[KindAbandons] > 0 && leaked[KindCloseFails] > 0
	})
	st := s.Stats()
	if st.Faults["reset"] < 2 {
		t.Errorf("the abandons poll and the close_fails close should each have met a reset: faults %v", st.Faults)
	}

	// The observer's closes of a close_fails operation fail with 503 for
	// observerCloseFailFor (scaled by Speed) after the first one, long
	// enough for its immediate retries to give up; a later close succeeds.
	var wh string
	for _, op := range getTruth(t, s).Operations {
		if op.StatementID == closeFailsID {
			wh = op.WarehouseID
		}
	}
	ref := sources.Ref{StatementID: closeFailsID, WarehouseID: wh}
	// (The outage window is over by now.)
	err := obs.CloseOperation(ctx, ref)
	if !(errors.As(err, &he) && he.StatusCode == 503) {
		t.Errorf("first observer close of a close_fails op: %v, want 503", err)
	}
	if err := obs.CloseOperation(ctx, ref); !(errors.As(err, &he) && he.StatusCode == 503) {
		t.Errorf("an immediate retry of the observer close: %v, want 503 too", err)
	}
	eventually(t, 10*time.Second, "an observer close after the fault window", func() bool {
		err := obs.CloseOperation(ctx, ref)
		return err == nil || errors.Is(err, sources.ErrHandleGone)
	})

	// The abandoned operation is reaped for inactivity; the ingest client
	// fills its endpoint; the observer outage on warehouse 0 happens.
	eventually(t, 15*time.Second, "a reaped orphan", func() bool {
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
	eventually(t, 20*time.Second, "the ingest client to fill most of its endpoint", func() bool {
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
