package sim

import (
	"os"
	"testing"
	"time"
)

func TestScratchDemoTimeline(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip()
	}
	s := startSim(t, Options{Scenario: ScenarioDemo, Logf: func(string, ...any) {}})
	start := time.Now()
	for i := 0; i < 13; i++ {
		time.Sleep(8 * time.Second)
		tr := getTruth(t, s)
		counts := map[string]int{}
		for _, op := range tr.Operations {
			counts[op.ClientKind+"/"+op.State]++
		}
		var ep TruthEndpoint
		for _, e := range tr.Endpoints {
			if e.Name == IngestEndpoint {
				ep = e
			}
		}
		st := s.Stats()
		t.Logf("t=%3.0fs ops=%d %v vs-prod=%d/%d exh=%v faults=%v ops=%+v", time.Since(start).Seconds(), len(tr.Operations), counts, ep.Rows, ep.RowLimit, ep.Exhausted, st.Faults, st.Operations)
	}
}
