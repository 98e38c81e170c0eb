package cmd

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// result is one run of the command line.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs dbxtop, with the real command bodies, in a fixed
// environment (never the test process's).
func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runApp(t, func(a *app) {}, env, args...)
}

// runApp runs dbxtop after adjust has changed the app (its command
// bodies, typically).
func runApp(t *testing.T, adjust func(*app), env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	adjust(a)
	code := a.run(context.Background(), args)
	return result{code, out.String(), errb.String()}
}

// hooks captures what the command bodies would receive; any call fails a
// test that expects validation to stop first.
type hooks struct {
	called string
	ws     WorkspaceConfig
	sim    SimConfig
	snap   SnapshotConfig
}

func newHooks() *hooks { return &hooks{} }

// run is runCLI with h's command bodies in place of the real ones.
func (h *hooks) run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runApp(t, h.wire, env, args...)
}

func (h *hooks) wire(a *app) {
	a.runTUI = func(_ context.Context, cfg WorkspaceConfig, _, _ io.Writer) int {
		h.called, h.ws = "tui", cfg
		return 0
	}
	a.runDemo = func(_ context.Context, ws WorkspaceConfig, sim SimConfig, _, _ io.Writer) int {
		h.called, h.ws, h.sim = "demo", ws, sim
		return 0
	}
	a.runSim = func(_ context.Context, sim SimConfig, _, _ io.Writer) int {
		h.called, h.sim = "sim", sim
		return 0
	}
	a.runSnapshot = func(_ context.Context, cfg SnapshotConfig, _, _ io.Writer) int {
		h.called, h.snap = "snapshot", cfg
		return 1
	}
}

func TestBadFlagValues(t *testing.T) {
	missingDir := filepath.Join(t.TempDir(), "no", "such", "dir", "dbxtop.log")
	cases := []struct {
		args []string
		code int
		want string // the whole stderr line, without "dbxtop: " and "\n"
	}{
		// Durations and thresholds.
		{[]string{"--refresh", "abc"}, 2, `invalid --refresh "abc": not a duration: write e.g. 30s, 5m or 1h30m`},
		{[]string{"--refresh", "5"}, 2, `invalid --refresh "5": missing unit: write e.g. 30s, 5m or 1h30m`},
		{[]string{"--refresh=-1s"}, 2, `invalid --refresh "-1s": must not be negative`},
		{[]string{"--refresh", "0s"}, 2, `invalid --refresh "0s": must be greater than zero`},
		{[]string{"--refresh", "1ms"}, 2, `invalid --refresh "1ms": must be at least 100ms`},
		{[]string{"--inactivity-warn=-5s"}, 2, `invalid --inactivity-warn "-5s": must not be negative`},
		{[]string{"--server-idle-timeout", "-1m"}, 2, `invalid --server-idle-timeout "-1m": must not be negative`},
		{[]string{"--leak-after", "0"}, 2, `invalid --leak-after "0": must be greater than zero`},
		{[]string{"--leak-after", "10ms"}, 2, `invalid --leak-after "10ms": must be at least 1s`},
		// Host URLs.
		{[]string{"--host", "adb-123.azuredatabricks.net"}, 2, `invalid --host "adb-123.azuredatabricks.net": want http(s)://host[:port], e.g. https://adb-123.4.azuredatabricks.net`},
		{[]string{"--host", "ftp://h.example"}, 2, `invalid --host "ftp://h.example": scheme "ftp": want https:// (or http:// for a local simulator)`},
		{[]string{"--host", "https://h.example/sql/1.0/warehouses/abc"}, 2, `invalid --host "https://h.example/sql/1.0/warehouses/abc": unexpected path "/sql/1.0/warehouses/abc": pass only the workspace URL (the warehouse path goes in --http-path)`},
		{[]string{"--host", "https://h.example/?o=123"}, 2, `invalid --host "https://h.example/?o=123": unexpected query string: pass only the workspace URL`},
		{[]string{"--host", "https://h.example#x"}, 2, `invalid --host "https://h.example#x": unexpected #fragment: pass only the workspace URL`},
		{[]string{"--host", "https://user:pw@h.example"}, 2, `invalid --host "https://[REDACTED]@h.example": user info is not allowed in the host; pass the token with DATABRICKS_TOKEN`},
		{[]string{"--host", "http://127.0.0.1:99999"}, 2, `invalid --host "http://127.0.0.1:99999": port "99999" is not in 1-65535`},
		{[]string{"--host", "https://"}, 2, `invalid --host "https://": no host name: want http(s)://host[:port]`},
		{[]string{"--host", "localhost:8080"}, 2, `invalid --host "localhost:8080": want http(s)://host[:port], e.g. https://adb-123.4.azuredatabricks.net`},
		// Other workspace flags.
		{[]string{"--http-path", "sql/1.0/warehouses/abc"}, 2, `invalid --http-path "sql/1.0/warehouses/abc": must start with / (e.g. /sql/1.0/warehouses/abc123)`},
		{[]string{"-w", "a,b", "--http-path", "/sql/1.0/warehouses/a"}, 2, `invalid --http-path "/sql/1.0/warehouses/a": names one warehouse but 2 --warehouse ids were given`},
		{[]string{"-w", "abc 123"}, 2, `invalid --warehouse "abc 123": a warehouse id is letters, digits, '-' and '_' (see the warehouse's Connection details)`},
		{[]string{"--token", ""}, 2, `invalid --token: the token must not be empty`},
		{[]string{"--log-file", missingDir}, 2, `invalid --log-file "` + missingDir + `": directory "` + filepath.Dir(missingDir) + `" does not exist`},
		{[]string{"--read-only=maybe"}, 2, `invalid --read-only "maybe": must be true or false`},
		{[]string{"--bogus"}, 2, `unknown flag: --bogus (see dbxtop --help)`},
		{[]string{"--refresh"}, 2, `flag needs an argument: --refresh`},
		{[]string{"frobnicate"}, 2, `unknown command or argument "frobnicate" for "dbxtop" (see dbxtop --help)`},
		// snapshot: exit 3 (Nagios UNKNOWN), never 2 (CRITICAL).
		{[]string{"snapshot", "--count", "5"}, 3, `invalid --count "5": only valid with --watch`},
		{[]string{"snapshot", "--interval", "10s"}, 3, `invalid --interval "10s": only valid with --watch`},
		{[]string{"snapshot", "--wide", "--json"}, 3, `invalid --wide: only for the table; --json prints JSON`},
		{[]string{"snapshot", "--wide", "--watch"}, 3, `invalid --wide: only for the table; --watch prints JSON`},
		{[]string{"snapshot", "--watch", "--count", "0"}, 3, `invalid --count "0": must be at least 1`},
		{[]string{"snapshot", "--watch", "--count", "ten"}, 3, `invalid --count "ten": not a whole number`},
		{[]string{"snapshot", "--watch", "--interval", "-1s"}, 3, `invalid --interval "-1s": must not be negative`},
		{[]string{"snapshot", "--timeout", "0s"}, 3, `invalid --timeout "0s": must be greater than zero`},
		{[]string{"snapshot", "--filter", "usr:alice"}, 3, `invalid --filter "usr:alice": unknown key "usr:" (keys: user: client: wh: state: flag: age> age< idle> idle<)`},
		{[]string{"snapshot", "--filter", "age>soon"}, 3, `invalid --filter "age>soon": age> wants a duration such as 90s, 5m or 1h30m, not "soon"`},
		{[]string{"snapshot", "--refresh", "soon"}, 3, `invalid --refresh "soon": not a duration: write e.g. 30s, 5m or 1h30m`},
		{[]string{"snapshot", "--host", "https://h.example/x"}, 3, `invalid --host "https://h.example/x": unexpected path "/x": pass only the workspace URL (the warehouse path goes in --http-path)`},
		{[]string{"snapshot", "--leak-after=-1s"}, 3, `invalid --leak-after "-1s": must not be negative`},
		{[]string{"snapshot", "--json=yes"}, 3, `invalid --json "yes": must be true or false`},
		{[]string{"snapshot", "--bogus"}, 3, `unknown flag: --bogus (see dbxtop snapshot --help)`},
		{[]string{"snapshot", "extra"}, 3, `unknown command or argument "extra" for "dbxtop snapshot" (see dbxtop snapshot --help)`},
		// sim.
		{[]string{"sim", "--scenario", "chaos"}, 2, `invalid --scenario "chaos": must be one of demo, quiet, load, vector-incident`},
		{[]string{"sim", "--warehouses", "0"}, 2, `invalid --warehouses "0": must be at least 1`},
		{[]string{"sim", "--warehouses", "-3"}, 2, `invalid --warehouses "-3": must be at least 1`},
		{[]string{"sim", "--warehouses", "1000"}, 2, `invalid --warehouses "1000": must be at most 100`},
		{[]string{"sim", "--listen", "8080"}, 2, `invalid --listen "8080": want host:port, e.g. 127.0.0.1:8080 (port 0 picks a free one)`},
		{[]string{"sim", "--listen", "127.0.0.1:70000"}, 2, `invalid --listen "127.0.0.1:70000": port "70000" is not in 0-65535`},
		{[]string{"sim", "--listen", ":8080"}, 2, `invalid --listen ":8080": empty host: name the interface, e.g. 127.0.0.1:8080`},
		{[]string{"sim", "--seed", "x"}, 2, `invalid --seed "x": not a whole number`},
		{[]string{"sim", "--idle-timeout=-1s"}, 2, `invalid --idle-timeout "-1s": must not be negative`},
		{[]string{"sim", "--leak-timeout", "5"}, 2, `invalid --leak-timeout "5": missing unit: write e.g. 30s, 5m or 1h30m`},
		{[]string{"sim", "--faults", "reset=2"}, 2, `invalid --faults "reset=2": item "reset=2": reset wants a probability between 0 and 1`},
		{[]string{"sim", "--faults", "explode=1"}, 2, `invalid --faults "explode=1": item "explode=1": unknown kind "explode" (reset, stale, throttle, throttle-bare, unavailable, gateway, exhausted, quota, latency)`},
		{[]string{"sim", "--faults", "reset=0.1@Nope"}, 2, `invalid --faults "reset=0.1@Nope": item "reset=0.1@Nope": unknown call "Nope" (a Thrift RPC name such as GetOperationStatus, or an SDK method such as ListQueries)`},
		{[]string{"sim", "--faults", "latency=soon"}, 2, `invalid --faults "latency=soon": item "latency=soon": latency wants a duration such as 250ms`},
		{[]string{"sim", "--faults", "reset=0.1,,stale=0.2"}, 2, `invalid --faults "reset=0.1,,stale=0.2": empty item in the comma list`},
		{[]string{"sim", "--faults", "exhausted="}, 2, `invalid --faults "exhausted=": item "exhausted=": exhausted wants an endpoint name`},
		{[]string{"sim", "--ops", "50"}, 2, `invalid --ops "50": only valid with --scenario load`},
		{[]string{"sim", "--scenario", "load", "--ops", "0"}, 2, `invalid --ops "0": must be at least 1`},
		{[]string{"sim", "--token", ""}, 2, `invalid --token: the token must not be empty`},
		{[]string{"sim", "--refresh", "5s"}, 2, `unknown flag: --refresh (see dbxtop sim --help)`},
		// demo.
		{[]string{"demo", "--host", "https://h.example"}, 2, "invalid --host \"https://h.example\": demo runs its own simulated workspace; use `dbxtop --host` for a real one"},
		{[]string{"demo", "-p", "prod"}, 2, "invalid --profile \"prod\": demo runs its own simulated workspace; use `dbxtop --profile` for a real one"},
		{[]string{"demo", "--scenario", "x"}, 2, `invalid --scenario "x": must be one of demo, quiet, load, vector-incident`},
		{[]string{"demo", "--refresh", "1"}, 2, `invalid --refresh "1": missing unit: write e.g. 30s, 5m or 1h30m`},
		{[]string{"completion", "tcsh"}, 2, `unknown shell "tcsh" for "dbxtop completion": bash, zsh, fish or powershell`},
		{[]string{"version", "now"}, 2, `unknown command or argument "now" for "dbxtop version" (see dbxtop version --help)`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			h := newHooks()
			r := h.run(t, nil, c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d", r.code, c.code)
			}
			if want := "dbxtop: " + c.want + "\n"; r.stderr != want {
				t.Errorf("stderr\n got %q\nwant %q", r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty (usage dump?): %q", r.stdout)
			}
			if h.called != "" {
				t.Errorf("%s ran despite the bad flag", h.called)
			}
		})
	}
}

func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := runCLI(t, nil, args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("%v: exit %d stderr %q", args, r.code, r.stderr)
		}
		for _, want := range []string{"demo", "sim", "snapshot", "version", "completion", "--inactivity-warn", "--server-idle-timeout", "--leak-after", "--read-only"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v: help lacks %q", args, want)
			}
		}
	}
	r := runCLI(t, nil, "snapshot", "--help")
	for _, want := range []string{"UNKNOWN", "CRITICAL", "--watch", "--interval", "--count", "--capacity-probe", "--timeout", "--json"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("snapshot help lacks %q", want)
		}
	}
	r = runCLI(t, nil, "sim", "--help")
	for _, want := range []string{"--listen", "--token", "--seed", "--faults", "--scenario", "--warehouses", "--idle-timeout", "--leak-timeout", "--ops"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("sim help lacks %q", want)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runCLI(t, nil, args...)
		if r.code != 0 || r.stdout != versionLine()+"\n" || !strings.HasPrefix(r.stdout, "dbxtop "+devVersion) || r.stderr != "" {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runCLI(t, nil, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, "dbxtop") {
			t.Errorf("completion %s: exit %d, %d bytes", shell, r.code, len(r.stdout))
		}
	}
}

func TestCompletesScenarios(t *testing.T) {
	r := runCLI(t, nil, "__complete", "sim", "--scenario", "")
	for _, want := range []string{"demo\n", "quiet\n", "load\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("completion of --scenario lacks %q: %q", want, r.stdout)
		}
	}
}

func TestUnwiredCommandsSaySo(t *testing.T) {
	unwired := func(a *app) { a.runTUI, a.runDemo, a.runSim = nil, nil, nil }
	for args, want := range map[string]string{"": "dbxtop: not built yet\n", "demo": "dbxtop demo: not built yet\n", "sim": "dbxtop sim: not built yet\n"} {
		r := runApp(t, unwired, nil, strings.Fields(args)...)
		if r.code != 1 || r.stderr != want {
			t.Errorf("%q: exit %d stderr %q, want 1 %q", args, r.code, r.stderr, want)
		}
	}
}

func TestRootConfig(t *testing.T) {
	h := newHooks()
	log := filepath.Join(t.TempDir(), "dbxtop.log")
	r := h.run(t, map[string]string{"DATABRICKS_TOKEN": " dapi-from-env\n", "NO_COLOR": "1"},
		"--host", "http://127.0.0.1:8080/", "-w", "abc,def", "--warehouse", "ghi", "--refresh", "2s",
		"--inactivity-warn", "30s", "--server-idle-timeout", "5m", "--leak-after", "90s", "--read-only", "--ascii",
		"--log-file", log, "-p", "dev")
	if r.code != 0 || r.stderr != "" || h.called != "tui" {
		t.Fatalf("%+v called %q", r, h.called)
	}
	want := WorkspaceConfig{Profile: "dev", Host: "http://127.0.0.1:8080/", Token: "dapi-from-env",
		Warehouses: []string{"abc", "def", "ghi"}, Refresh: 2 * time.Second,
		Thresholds: model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: 90 * time.Second,
			ServerLeakTimeout: 23 * time.Minute},
		ReadOnly: true, NoColor: true, ASCII: true, LogFile: log, AuthTimeout: 15 * time.Second}
	if !equalWS(h.ws, want) {
		t.Errorf("config\n got %+v\nwant %+v", h.ws, want)
	}
}

func equalWS(a, b WorkspaceConfig) bool {
	return a.Profile == b.Profile && a.Host == b.Host && a.Token == b.Token &&
		strings.Join(a.Warehouses, ",") == strings.Join(b.Warehouses, ",") && a.HTTPPath == b.HTTPPath &&
		a.Refresh == b.Refresh && a.Thresholds == b.Thresholds && a.ReadOnly == b.ReadOnly &&
		a.NoColor == b.NoColor && a.ASCII == b.ASCII && a.LogFile == b.LogFile
}

func TestDefaults(t *testing.T) {
	h := newHooks()
	if r := h.run(t, nil); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	want := WorkspaceConfig{Refresh: 5 * time.Second, Thresholds: model.DefaultThresholds}
	if !equalWS(h.ws, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", h.ws, want)
	}
	if r := h.run(t, map[string]string{"NO_COLOR": ""}); r.code != 0 || h.ws.NoColor {
		t.Error("an empty NO_COLOR must not disable colour (no-color.org)")
	}
}

func TestTokenFlagWarnsWithoutEchoing(t *testing.T) {
	h := newHooks()
	const secret = "dapi0123456789abcdef"
	r := h.run(t, map[string]string{"DATABRICKS_TOKEN": "from-env"}, "--token", secret)
	if r.code != 0 || h.ws.Token != secret {
		t.Fatalf("exit %d token %q: an explicit flag comes first in unified auth", r.code, h.ws.Token)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "process list") || !strings.Contains(r.stderr, "DATABRICKS_TOKEN") {
		t.Errorf("warning %q", r.stderr)
	}
	if strings.Contains(r.stderr+r.stdout, secret) || strings.Contains(r.stderr, "from-env") {
		t.Errorf("a token was echoed: %q", r.stderr)
	}
	// Even the help text never shows a token.
	r = h.run(t, nil, "--token", secret, "--help")
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Error("help echoed the token")
	}
}

func TestSnapshotConfig(t *testing.T) {
	h := newHooks()
	r := h.run(t, nil, "snapshot", "--json", "--watch", "--count", "3", "--capacity-probe", "--timeout", "10s", "--refresh", "2s")
	if r.code != 1 || h.called != "snapshot" {
		t.Fatalf("exit %d (the body's status must pass through) called %q", r.code, h.called)
	}
	s := h.snap
	if !s.JSON || !s.Watch || s.Count != 3 || !s.CapacityProbe || s.Timeout != 10*time.Second || s.Interval != 2*time.Second {
		t.Errorf("snapshot config %+v (interval defaults to --refresh)", s)
	}
	r = h.run(t, nil, "snapshot", "--watch", "--interval", "1m")
	if r.code != 1 || h.snap.Interval != time.Minute || h.snap.Count != 0 || h.snap.Timeout != 30*time.Second {
		t.Errorf("exit %d config %+v", r.code, h.snap)
	}
}

func TestSimConfig(t *testing.T) {
	h := newHooks()
	r := h.run(t, nil, "sim", "--listen", "127.0.0.1:8080", "--token", "t0k", "--seed", "-7",
		"--faults", "reset=0.2@GetOperationStatus, throttle=0.1,exhausted=vs-1,latency=50ms@ListQueries",
		"--scenario", "load", "--ops", "500", "--warehouses", "4", "--idle-timeout", "2m", "--leak-timeout", "5m")
	if r.code != 0 || h.called != "sim" {
		t.Fatalf("%+v", r)
	}
	want := SimConfig{Listen: "127.0.0.1:8080", Token: "t0k", Seed: -7,
		Faults:   "reset=0.2@GetOperationStatus, throttle=0.1,exhausted=vs-1,latency=50ms@ListQueries",
		Scenario: "load", Warehouses: 4, IdleTimeout: 2 * time.Minute, LeakTimeout: 5 * time.Minute, Ops: 500, CheckHandleSecrets: true}
	if h.sim != want {
		t.Errorf("sim config\n got %+v\nwant %+v", h.sim, want)
	}
	// Strict by default: handle secrets are checked.
	if r := h.run(t, nil, "sim"); r.code != 0 || h.sim != (SimConfig{Listen: "127.0.0.1:0", Scenario: "demo", Seed: 1, CheckHandleSecrets: true}) {
		t.Errorf("sim defaults %+v", h.sim)
	}
}

// The GUID-only handle lookup is opt-in, under either of its two names,
// never both.
func TestSimLenientHandlesIsOptIn(t *testing.T) {
	for _, args := range [][]string{{"sim", "--lenient-handles"}, {"sim", "--check-handle-secrets=false"}, {"demo", "--lenient-handles"}} {
		h := newHooks()
		if r := h.run(t, nil, args...); r.code != 0 || h.sim.CheckHandleSecrets {
			t.Errorf("%v: exit %d, check secrets %v, want lenient", args, r.code, h.sim.CheckHandleSecrets)
		}
	}
	for _, cmd := range []string{"sim", "demo"} {
		r := runCLI(t, nil, cmd, "--lenient-handles", "--check-handle-secrets=false")
		if r.code != 2 || strings.TrimSpace(r.stderr) != "dbxtop: --lenient-handles is --check-handle-secrets=false: give one of them" {
			t.Errorf("%s with both: exit %d, stderr %q", cmd, r.code, r.stderr)
		}
	}
}

func TestDemoThresholdsFollowSimulator(t *testing.T) {
	h := newHooks()
	if r := h.run(t, map[string]string{"DATABRICKS_TOKEN": "real-workspace-token"}, "demo"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	want := model.Thresholds{InactivityWarn: 15 * time.Second, ServerIdleTimeout: 90 * time.Second, LeakAfter: 18 * time.Second,
		ServerLeakTimeout: 150 * time.Second}
	if h.ws.Thresholds != want {
		t.Errorf("demo thresholds %+v, want %+v", h.ws.Thresholds, want)
	}
	if h.ws.Token != "" {
		t.Error("demo must not hand a real workspace token to the simulator's client")
	}
	// UNCLOSED turns critical (5×) before the simulator's leak reaper
	// (150s) and by 120s.
	if c := 5 * h.ws.Thresholds.LeakAfter; c > 2*time.Minute {
		t.Errorf("UNCLOSED critical only after %v", c)
	}
	// Explicit thresholds win; the rest follow --idle-timeout.
	if r := h.run(t, nil, "demo", "--inactivity-warn", "40s", "--idle-timeout", "3m", "--token", "simtok"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	want = model.Thresholds{InactivityWarn: 40 * time.Second, ServerIdleTimeout: 3 * time.Minute, LeakAfter: 18 * time.Second,
		ServerLeakTimeout: 150 * time.Second}
	if h.ws.Thresholds != want || h.sim.Token != "simtok" || h.sim.IdleTimeout != 3*time.Minute {
		t.Errorf("demo %+v sim %+v", h.ws.Thresholds, h.sim)
	}
	// Scenario quiet: the simulator's realistic timeouts.
	if r := h.run(t, nil, "demo", "--scenario", "quiet"); r.code != 0 || h.ws.Thresholds.ServerIdleTimeout != 430*time.Second {
		t.Errorf("quiet demo %+v", h.ws.Thresholds)
	}
}
