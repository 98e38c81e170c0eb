package sim

import (
	"testing"
	"time"
)

// The load scenario keeps Ops long-running healthy operations alive: their
// clients poll often enough that the idle reaper never takes them.
func TestLoadScenario(t *testing.T) {
	s := startSim(t, Options{Scenario: ScenarioLoad, Ops: 6, Speed: 100, IdleTimeout: time.Second, ReapEvery: 50 * time.Millisecond})
	running := func() int {
		n := 0
		for _, op := range getTruth(t, s).Operations {
			if op.ClientKind == KindHealthy && op.Open && op.State == "RUNNING" {
				n++
			}
		}
		return n
	}
	eventually(t, 5*time.Second, "6 running healthy operations", func() bool { return running() == 6 })
	// Twice the idle timeout later (polls every 200 ms), nothing was reaped.
	deadline := time.Now().Add(2 * time.Second)
	eventually(t, 5*time.Second, "two idle timeouts to pass", func() bool { return time.Now().After(deadline) })
	if n := running(); n != 6 {
		t.Errorf("%d running after 2 s, want 6", n)
	}
	if st := s.Stats(); st.Operations.ReapedInactive != 0 || st.Requests["GetOperationStatus"] < 6 {
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
