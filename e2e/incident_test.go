package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/capstore"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
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
	budget(t)
	start := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	clk := sim.NewManualClock(start)
	s := startSimServer(t, sim.Options{Scenario: sim.ScenarioVectorIncident, Clock: clk})
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
			Clock: manualPollerClock{clk}, Idle: []sources.IdleCloser{rest},
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
	wantWhy := fmt.Sprintf("limit learned %s from RESOURCE_EXHAUSTED at 1,984,112 rows, answering dbxtop's empty probe upsert, request ",
		(start.Add(r.exhaustedAt)).Format("2006-01-02 15:04 UTC"))
	if a.RowLimit != sim.IncidentRowLimit || a.RowLimitSource != model.LimitLearned || !strings.HasPrefix(a.RowLimitWhy, wantWhy) ||
		!strings.HasSuffix(a.RowLimitWhy, " (over the published ≈2 M)") {
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

// TestLearnedLimitStateFileThroughTheBinary: `dbxtop snapshot
// --capacity-probe` on a full endpoint learns its limit into
// $XDG_STATE_HOME/dbxtop/learned-limits.json; a corrupt state file is
// moved aside with one warning line and nothing else changes; an
// unwritable state directory is one warning line and the limit is still
// used (in memory).
func TestLearnedLimitStateFileThroughTheBinary(t *testing.T) {
	budget(t)
	s := startSimServer(t, sim.Options{Scenario: sim.ScenarioQuiet, Faults: "exhausted=vs-staging"})
	args := []string{"snapshot", "--host", s.URL(), "--json", "--capacity-probe", "--timeout", "20s"}
	env := func(state string) []string {
		return []string{"DATABRICKS_TOKEN=" + s.Token(), "XDG_STATE_HOME=" + state}
	}
	staging := func(t *testing.T, r result) model.EndpointView {
		t.Helper()
		var snap model.Snapshot
		if err := json.Unmarshal([]byte(r.stdout), &snap); err != nil {
			t.Fatalf("%v\n%s", err, r)
		}
		for _, e := range snap.Endpoints {
			if e.Name == "vs-staging" {
				return e
			}
		}
		t.Fatalf("no vs-staging\n%s", r)
		return model.EndpointView{}
	}
	warnings := func(r result) []string {
		var out []string
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.HasPrefix(l, "dbxtop: learned limits: ") {
				out = append(out, l)
			}
		}
		return out
	}

	state := t.TempDir()
	file := filepath.Join(state, "dbxtop", capstore.FileName)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("{half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, runOpts{args: args, env: env(state)})
	noStackTrace(t, "snapshot", r.stderr)
	if w := warnings(r); len(w) != 1 || !strings.Contains(w[0], file+" is not a learned-limits file") || !strings.Contains(w[0], "moved to "+file+".corrupt-") {
		t.Fatalf("corrupt state file: warnings %q\n%s", w, r)
	}
	if e := staging(t, r); e.RowLimitSource != model.LimitLearned || !e.Exhausted {
		t.Errorf("vs-staging: limit %d from %q, exhausted %v", e.RowLimit, e.RowLimitSource, e.Exhausted)
	}
	if aside, _ := filepath.Glob(file + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("moved aside: %v", aside)
	} else if b, _ := os.ReadFile(aside[0]); string(b) != "{half a file" {
		t.Errorf("the corrupt file's content changed: %q", b)
	}
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), `"vs-staging"`) {
		t.Errorf("state file after learning: %s %v", b, err)
	}
	// The next run reads it back, silently.
	r = run(t, runOpts{args: args, env: env(state)})
	if w := warnings(r); len(w) != 0 {
		t.Errorf("second run: warnings %q", w)
	}
	if e := staging(t, r); e.RowLimitSource != model.LimitLearned {
		t.Errorf("second run: limit from %q", e.RowLimitSource)
	}

	// Under systemd (StateDirectory=) the file is $STATE_DIRECTORY's, not
	// XDG_STATE_HOME's: the unit's sandbox can write only there.
	svcState, xdg := t.TempDir(), t.TempDir()
	r = run(t, runOpts{args: args, env: append(env(xdg), "STATE_DIRECTORY="+svcState)})
	if e := staging(t, r); e.RowLimitSource != model.LimitLearned {
		t.Errorf("STATE_DIRECTORY: limit from %q", e.RowLimitSource)
	}
	if b, err := os.ReadFile(filepath.Join(svcState, capstore.FileName)); err != nil || !strings.Contains(string(b), `"vs-staging"`) {
		t.Errorf("learned limit not under $STATE_DIRECTORY: %s %v\n%s", b, err, r)
	}
	if _, err := os.Stat(filepath.Join(xdg, "dbxtop", capstore.FileName)); err == nil {
		t.Errorf("learned limit written under XDG_STATE_HOME although STATE_DIRECTORY is set")
	}

	// Unwritable: XDG_STATE_HOME is a regular file.
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, runOpts{args: args, env: env(blocker)})
	if w := warnings(r); len(w) != 1 || !strings.Contains(w[0], "cannot write") || !strings.Contains(w[0], "kept in memory only") {
		t.Fatalf("unwritable: warnings %q\n%s", w, r)
	}
	if e := staging(t, r); e.RowLimitSource != model.LimitLearned {
		t.Errorf("unwritable: limit from %q, want the learned one in memory", e.RowLimitSource)
	}
}
