package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/capstore"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// manualPollerClock is the simulator's ManualClock seen by the engine: a
// backoff wait (none is expected) moves the shared clock instead of
// sleeping.
type manualPollerClock struct{ c *sim.ManualClock }

func (m manualPollerClock) Now() time.Time { return m.c.Now() }
func (m manualPollerClock) After(d time.Duration) <-chan time.Time {
	m.c.Advance(d)
	ch := make(chan time.Time, 1)
	ch <- m.c.Now()
	return ch
}

// incidentRun is what dbxtop saw of vs-endpoint-1, round by round.
type incidentRun struct {
	warnAt, critAt, exhaustedAt time.Duration // since the start; -1: never
	firstRefusal                time.Duration // the simulator's first 429, since the start
	atCritical                  model.EndpointView
	afterExhausted              model.EndpointView
}

// TestVectorIncidentLeadTime replays the incident (the vector-incident
// scenario: real row numbers, the writer's two minutes on a manual clock)
// against dbxtop's real REST source and engine with --capacity-probe and
// the default 5 s refresh. dbxtop must raise CAPACITY warning (≥ 80 %) and
// then critical (≥ 95 %) of the published ≈2 M before the endpoint's first
// RESOURCE_EXHAUSTED; after it, the learned limit (1,984,112, persisted)
// replaces the published one. The lead times go to docs/capacity.md.
func TestVectorIncidentLeadTime(t *testing.T) {
	start := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	clk := sim.NewManualClock(start)
	s := startSimServer(t, sim.Options{Scenario: sim.ScenarioVectorIncident, Clock: clk, Logf: func(string, ...any) {}})
	statePath := filepath.Join(t.TempDir(), "dbxtop", capstore.FileName)
	var warnings []string
	store := capstore.Open(statePath, func(l string) { warnings = append(warnings, l) })

	run := func(rounds int, record func(round int, v model.EndpointView)) {
		ctx := context.Background()
		rest, err := databricks.New(ctx, databricks.Config{Host: s.URL(), Token: s.Token(), UserAgent: "dbxtop/e2e", Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer rest.CloseIdleConnections()
		eng := poller.NewEngine(poller.Options{
			Discoverer: rest, Status: rest, Capacity: rest, Probe: true,
			Learned: store.ForWorkspace(rest.Host()), Workspace: model.Workspace{Host: rest.Host()},
			Clock: manualPollerClock{clk}, Idle: []poller.IdleCloser{rest},
		})
		for i := 0; i < rounds; i++ {
			if err := eng.RunOnce(ctx); err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			for _, v := range eng.Snapshot().Endpoints {
				if v.Name == sim.IncidentEndpoint {
					record(i, v)
				}
			}
			clk.Advance(5 * time.Second)
		}
	}

	r := incidentRun{warnAt: -1, critAt: -1, exhaustedAt: -1}
	run(30, func(_ int, v model.EndpointView) { // 2 min 30 s
		at := clk.Now().Sub(start)
		var capSev model.Severity
		for _, f := range v.Flags {
			if f.Kind == model.FlagCapacity {
				capSev = f.Severity
			}
		}
		if r.warnAt < 0 && capSev != "" {
			r.warnAt = at
			if capSev != model.SeverityWarning {
				t.Errorf("first CAPACITY flag at %v is %s, want warning first", at, capSev)
			}
		}
		if r.critAt < 0 && capSev == model.SeverityCritical {
			r.critAt, r.atCritical = at, v
		}
		if r.exhaustedAt < 0 && v.HasFlag(model.FlagExhausted) && v.Exhausted {
			r.exhaustedAt, r.afterExhausted = at, v
		}
		if r.exhaustedAt < 0 && v.RowLimitSource != model.LimitPublished {
			t.Errorf("at %v, before any refusal: limit %d from %q", at, v.RowLimit, v.RowLimitSource)
		}
	})
	for _, e := range s.Truth().Endpoints {
		if e.Name == sim.IncidentEndpoint && e.FirstRefusedAt != nil {
			r.firstRefusal = e.FirstRefusedAt.Sub(start)
		}
	}
	t.Logf("CAPACITY warning at %v, critical at %v, first RESOURCE_EXHAUSTED at %v (dbxtop saw it at %v): lead %v (warning), %v (critical)",
		r.warnAt, r.critAt, r.firstRefusal, r.exhaustedAt, r.firstRefusal-r.warnAt, r.firstRefusal-r.critAt)
	if r.warnAt < 0 || r.critAt < 0 || r.exhaustedAt < 0 || r.firstRefusal == 0 {
		t.Fatalf("missing a stage: %+v", r)
	}
	if !(r.warnAt < r.critAt && r.critAt < r.firstRefusal) {
		t.Fatalf("warning %v, critical %v, first refusal %v: not in that order", r.warnAt, r.critAt, r.firstRefusal)
	}
	// The refusal came from the probe of the round that saw the endpoint
	// full, not later.
	if r.exhaustedAt != r.firstRefusal {
		t.Errorf("dbxtop saw RESOURCE_EXHAUSTED at %v, the first refusal was at %v", r.exhaustedAt, r.firstRefusal)
	}
	// The write rate (3,534 rows/s) and a time to full were on screen with
	// the critical flag.
	if wr := r.atCritical.WriteRowsPerMin; wr < 200_000 || wr > 220_000 || r.atCritical.ETAFull == nil {
		t.Errorf("at critical: write rate %v rows/min, ETA %v", wr, r.atCritical.ETAFull)
	}
	// After the refusal: the learned limit replaces the published one.
	a := r.afterExhausted
	wantWhy := fmt.Sprintf("limit learned %s from RESOURCE_EXHAUSTED at 1,984,112 rows (over the published ≈2 M)",
		(start.Add(r.exhaustedAt)).Format("2006-01-02 15:04 UTC"))
	if a.RowLimit != sim.IncidentRowLimit || a.RowLimitSource != model.LimitLearned || a.RowLimitWhy != wantWhy {
		t.Errorf("after the refusal: limit %d from %q (%q), want %d learned (%q)", a.RowLimit, a.RowLimitSource, a.RowLimitWhy, sim.IncidentRowLimit, wantWhy)
	}
	if a.LastError == nil || a.LastError.HTTPStatus != 429 || a.LastError.ErrorCode != "RESOURCE_EXHAUSTED" || a.LastError.RequestID == "" ||
		!strings.Contains(a.LastError.Message, "Endpoint capacity has reached capacity limit.") {
		t.Errorf("last error %+v", a.LastError)
	}
	// Persisted: a new dbxtop (new engine, store reopened) starts with it.
	store = capstore.Open(statePath, func(l string) { warnings = append(warnings, l) })
	var first model.EndpointView
	run(1, func(_ int, v model.EndpointView) { first = v })
	if first.RowLimitSource != model.LimitLearned || first.RowLimit != sim.IncidentRowLimit {
		t.Errorf("after a restart: limit %d from %q", first.RowLimit, first.RowLimitSource)
	}
	if len(warnings) != 0 {
		t.Errorf("state file warnings: %q", warnings)
	}
}
