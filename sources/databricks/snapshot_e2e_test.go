package databricks_test

// End-to-end checks of `dbxtop snapshot` (issue 6 "Done when") through the
// real command line, the real REST and Thrift clients and the real
// simulator over loopback HTTP. They live here, beside the REST source
// they exercise, because cmd/ belongs to the CLI's owner.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/cmd"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/sim"
)

type run struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func startSim(t *testing.T, o sim.Options) *sim.Server {
	t.Helper()
	if o.Scenario == "" {
		o.Scenario = "quiet"
	}
	s, err := sim.Start(context.Background(), o)
	if err != nil {
		t.Fatalf("sim.Start: %v", err)
	}
	// The token goes through the environment, as operators are told to.
	t.Setenv("DATABRICKS_TOKEN", s.Token())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

func snapshot(t *testing.T, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	start := time.Now()
	code := cmd.ExecuteContext(context.Background(), append([]string{"snapshot"}, args...), &out, &errb)
	return run{code: code, stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
}

func decode(t *testing.T, s string) model.Snapshot {
	t.Helper()
	var snap model.Snapshot
	if err := json.Unmarshal([]byte(s), &snap); err != nil {
		t.Fatalf("stdout is not snapshot JSON: %v\n%s", err, s)
	}
	return snap
}

func TestSnapshotQuietWorkspaceIsOK(t *testing.T) {
	s := startSim(t, sim.Options{})
	r := snapshot(t, "--host", s.URL(), "--json")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstderr: %s", r.code, r.stderr)
	}
	snap := decode(t, r.stdout)
	if snap.Workspace.Host != s.URL() {
		t.Errorf("workspace host %q", snap.Workspace.Host)
	}
	if len(snap.Workspace.Warehouses) != len(s.WarehouseIDs()) {
		t.Errorf("header warehouses %v, sim has %v", snap.Workspace.Warehouses, s.WarehouseIDs())
	}
	if len(snap.Endpoints) != len(s.EndpointRowLimits()) {
		t.Errorf("endpoints %d, sim has %d", len(snap.Endpoints), len(s.EndpointRowLimits()))
	}
	for _, ep := range snap.Endpoints {
		if want := s.EndpointRowLimits()[ep.Name]; ep.RowLimit != want {
			t.Errorf("%s: row limit %d, want the tagged %d", ep.Name, ep.RowLimit, want)
		}
	}
	mustNot(t, r.stdout+r.stderr, s.Token())
}

func TestSnapshotQuotaOnListQueries(t *testing.T) {
	s := startSim(t, sim.Options{Faults: "quota=1@ListQueries"})
	r := snapshot(t, "--host", s.URL())
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr: %s", r.code, r.stderr)
	}
	if n := s.Stats().Requests["ListQueries"]; n != 1 {
		t.Errorf("%d ListQueries requests, want exactly 1", n)
	}
	if r.elapsed >= 2*time.Second {
		t.Errorf("took %v, want < 2s", r.elapsed)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 1 {
		t.Errorf("stderr has %d lines, want one:\n%s", len(lines), r.stderr)
	}
	line := lines[len(lines)-1]
	for _, want := range []string{"ListQueries", "RESOURCE_EXHAUSTED", "error_code=RESOURCE_EXHAUSTED", "request_id="} {
		if !strings.Contains(line, want) {
			t.Errorf("stderr %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "request_id=none") {
		t.Errorf("no request id: %q", line)
	}
	t.Logf("quota: exit %d in %v, stderr: %s", r.code, r.elapsed, line)
}

func TestSnapshotThrottleHonoursRetryAfter(t *testing.T) {
	s := startSim(t, sim.Options{Faults: "throttle=0.5@ListQueries", Seed: 7})
	r := snapshot(t, "--host", s.URL(), "--json", "--timeout", "60s")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (throttling is retried)\nstderr: %s", r.code, r.stderr)
	}
	throttled := s.Stats().Faults["throttle"]
	if throttled == 0 {
		t.Fatalf("seed 7 produced no throttle: the fault schedule changed, pick a seed that throttles")
	}
	// Each throttled answer carried Retry-After: 1, so the snapshot waited
	// at least one second per throttle before asking again.
	if min := time.Duration(throttled) * time.Second; r.elapsed < min {
		t.Errorf("%d throttles answered in %v: Retry-After: 1 not honoured (want ≥ %v)", throttled, r.elapsed, min)
	}
	t.Logf("throttle: %d throttled answers, %d ListQueries requests, snapshot in %v",
		throttled, s.Stats().Requests["ListQueries"], r.elapsed)
}

func TestSnapshotWrongToken(t *testing.T) {
	s := startSim(t, sim.Options{})
	const wrong = "dapi-wrong-0123456789abcdef"
	t.Setenv("DATABRICKS_TOKEN", wrong)
	r := snapshot(t, "--host", s.URL())
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr: %s", r.code, r.stderr)
	}
	var total int64
	for _, n := range s.Stats().Requests {
		total += n
	}
	if total != 1 {
		t.Errorf("%d requests reached the server, want 1: %v", total, s.Stats().Requests)
	}
	if !strings.Contains(r.stderr, "credentials were refused") {
		t.Errorf("stderr does not say the credentials were refused: %s", r.stderr)
	}
	mustNot(t, r.stdout+r.stderr, wrong)
	mustNot(t, r.stdout+r.stderr, s.Token())
}

func TestSnapshotUnknownProfile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/databrickscfg"
	if err := os.WriteFile(path, []byte("[prod]\nhost = http://127.0.0.1:1\ntoken = dapi-x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABRICKS_CONFIG_FILE", path)
	r := snapshot(t, "--profile", "staging")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr: %s", r.code, r.stderr)
	}
	for _, want := range []string{`"staging"`, path} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not name %s", r.stderr, want)
		}
	}
}

func TestSnapshotCapacityProbe(t *testing.T) {
	// vs-prod holds Direct Access indexes; vs-analytics only a Delta Sync
	// one, which the probe must skip.
	const full = "vs-prod"
	s := startSim(t, sim.Options{Faults: "exhausted=" + full})
	before := s.Stats().Requests["UpsertDataVectorIndex"]
	r := snapshot(t, "--host", s.URL(), "--json", "--capacity-probe")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2 (an exhausted endpoint is critical)\nstderr: %s\n%s", r.code, r.stderr, r.stdout)
	}
	upserts := s.Stats().Requests["UpsertDataVectorIndex"] - before
	if want := int64(len(s.EndpointRowLimits()) - 1); upserts != want {
		t.Errorf("%d upserts, want exactly one per endpoint with a Direct Access index (%d)", upserts, want)
	}
	if w := s.Stats().ObserverWrites; w["DELTA_SYNC"] != 0 || w["DIRECT_ACCESS"] != upserts {
		t.Errorf("observer writes by index type %v", w)
	}
	snap := decode(t, r.stdout)
	var found bool
	for _, ep := range snap.Endpoints {
		if ep.Name != full {
			if ep.HasFlag(model.FlagExhausted) {
				t.Errorf("%s flagged EXHAUSTED but only %s is full", ep.Name, full)
			}
			continue
		}
		found = true
		if !ep.Exhausted || !ep.HasFlag(model.FlagExhausted) {
			t.Errorf("%s not EXHAUSTED: %+v", full, ep)
		}
		if ep.LastError == nil || ep.LastError.ErrorCode != "RESOURCE_EXHAUSTED" || ep.LastError.RequestID == "" || ep.LastError.Message == "" {
			t.Errorf("%s: server message and request id missing: %+v", full, ep.LastError)
		}
		if ep.RowLimitSource != model.LimitLearned || !strings.Contains(ep.RowLimitWhy, "answering dbxtop's empty probe upsert, request ") {
			t.Errorf("%s: limit %q %q, want learned from the probe", full, ep.RowLimitSource, ep.RowLimitWhy)
		}
	}
	if !found {
		t.Fatalf("endpoint %s not reported", full)
	}
}

func TestSnapshotWatchPrintsJSONLines(t *testing.T) {
	s := startSim(t, sim.Options{})
	r := snapshot(t, "--host", s.URL(), "--watch", "--interval", "100ms", "--count", "3")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), r.stdout)
	}
	for _, l := range lines {
		if snap := decode(t, l); snap.Workspace.Host != s.URL() {
			t.Errorf("line for host %q", snap.Workspace.Host)
		}
	}
}

func mustNot(t *testing.T, s, secret string) {
	t.Helper()
	if secret != "" && strings.Contains(s, secret) {
		t.Errorf("output contains a secret")
	}
}

func TestSnapshotTableByDefault(t *testing.T) {
	s := startSim(t, sim.Options{})
	r := snapshot(t, "--host", s.URL(), "--ascii")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	for _, want := range []string{"dbxtop snapshot", "host " + s.URL(), "OPERATIONS", "ENDPOINTS"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b") {
		t.Errorf("colour codes in output that is not a terminal")
	}
	if r.stderr != "" {
		t.Errorf("stderr not empty on success: %s", r.stderr)
	}
}

func TestSnapshotTimeoutBoundsTheCommand(t *testing.T) {
	s := startSim(t, sim.Options{Faults: "latency=5s@ListQueries"})
	r := snapshot(t, "--host", s.URL(), "--timeout", "500ms")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr: %s", r.code, r.stderr)
	}
	if r.elapsed >= 4*time.Second {
		t.Errorf("took %v: --timeout 500ms did not bound the command", r.elapsed)
	}
	for _, want := range []string{"--timeout of 500ms expired", "ListQueries", "error_code=", "request_id="} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
	if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("more than one stderr line: %s", r.stderr)
	}
	t.Logf("timeout: exit %d in %v: %s", r.code, r.elapsed, strings.TrimSpace(r.stderr))
}

func TestSnapshotSurvivesStatusResets(t *testing.T) {
	// A compressed demo so operations exist, with a real TCP reset on 30 %
	// of all GetOperationStatus calls (ours included).
	s := startSim(t, sim.Options{Scenario: "demo", Seed: 3, Speed: 20, Faults: "reset=0.3@GetOperationStatus"})
	truth := waitTruth(t, s, func(tr sim.Truth) bool {
		for _, op := range tr.Operations {
			if op.State == "RUNNING" {
				return true
			}
		}
		return false
	})
	r := snapshot(t, "--host", s.URL(), "--json", "--timeout", "20s")
	if r.code == 3 {
		t.Fatalf("exit 3: %s", r.stderr)
	}
	snap := decode(t, r.stdout)
	seen := map[string]bool{}
	for _, o := range snap.Operations {
		seen[o.StatementID] = true
		if o.HasFlag(model.FlagStale) {
			t.Errorf("%s STALE: a reset poll was not retried (%+v)", o.StatementID, o.LastError)
		}
	}
	live := 0
	for _, op := range truth.Operations {
		if op.State == "RUNNING" || op.State == "PENDING" {
			live++
			if !seen[op.StatementID] {
				t.Errorf("live %s missing", op.StatementID)
			}
		}
	}
	if live == 0 {
		t.Fatalf("no live operation in the compressed demo: nothing was tested")
	}
	t.Logf("resets: %d injected, %d live operations all observed, exit %d in %v",
		s.Stats().Faults["reset"], live, r.code, r.elapsed)
}

// waitTruth polls the simulator's ground truth until cond holds (the
// workload runs on its own timeline; there is no event to wait on).
func waitTruth(t *testing.T, s *sim.Server, cond func(sim.Truth) bool) sim.Truth {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		tr := s.Truth()
		if cond(tr) {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("simulator never reached the expected state")
		}
		<-time.After(50 * time.Millisecond)
	}
}
