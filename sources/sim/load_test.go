package sim

import (
	"testing"
	"time"
)

// The load scenario keeps Ops long-running healthy operations alive: their
// clients poll often enough that the idle reaper never takes them. The
// server runs on a manual clock, so the check does not depend on how fast
// this machine is: after each clock step we wait until every client has
// polled again, then run the reaper.
func TestLoadScenario(t *testing.T) {
	clk := NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	const idle = 10 * time.Second
	s := startSim(t, Options{Scenario: ScenarioLoad, Ops: 6, Speed: 100, Clock: clk, IdleTimeout: idle, ReapEvery: time.Hour})
	ops := func() []TruthOperation {
		var out []TruthOperation
		for _, op := range getTruth(t, s).Operations {
			if op.ClientKind == KindHealthy && op.Open {
				out = append(out, op)
			}
		}
		return out
	}
	eventually(t, 10*time.Second, "6 operations", func() bool { return len(ops()) == 6 })
	for step := 0; step < 4; step++ { // 4 × 6 s = 24 s > the 10 s idle timeout
		clk.Advance(6 * time.Second)
		now := clk.Now()
		eventually(t, 10*time.Second, "every client to poll again", func() bool {
			for _, op := range ops() {
				if op.OwnerLastActivity.Before(now) {
					return false
				}
			}
			return true
		})
		s.store.reap()
	}
	got := ops()
	if len(got) != 6 {
		t.Fatalf("%d open operations, want 6", len(got))
	}
	for _, op := range got {
		if op.State != "RUNNING" {
			t.Errorf("%s is %s, want RUNNING", op.StatementID, op.State)
		}
	}
	if st := s.Stats(); st.Operations.ReapedInactive != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestQuietScenarioHasNoWorkload(t *testing.T) {
	s := startSim(t, Options{Scenario: ScenarioQuiet, Warehouses: 5})
	if n := len(s.WarehouseIDs()); n != 5 {
		t.Errorf("%d warehouses", n)
	}
	if tr := getTruth(t, s); len(tr.Operations) != 0 {
		t.Errorf("quiet scenario has operations: %+v", tr.Operations)
	}
	if _, err := Start(t.Context(), Options{Scenario: "busy"}); err == nil {
		t.Error("unknown scenario accepted")
	}
}
