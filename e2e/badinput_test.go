package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// badInput is one refused command line or configuration.
type badInput struct {
	name string
	args []string
	env  []string
	home string // "" → a fresh empty HOME
	// toFile sends stdout to a regular file (the non-TTY cases).
	toFile bool
	code   int
	// exact is the whole of stderr (one line); when empty, contains
	// lists substrings of the one line (ports, paths and timings vary).
	exact    string
	contains []string
	absent   []string // never in stdout or stderr (tokens)
}

const nonTTY = "standard output is not a terminal; for scripts use `dbxtop snapshot` (add --json for JSON)"

// TestBadInput runs every bad input through the real binary: each must
// exit with its documented status and say what is wrong in one line,
// with no stack trace. The table is docs/reliability.md "Bad input".
func TestBadInput(t *testing.T) {
	t.Parallel()
	budget(t)
	s := startSim(t, t.TempDir(), "--scenario", "quiet", "--token", "dapiRIGHT0123456789abcdef")
	closed := closedPort(t)
	held := heldPort(t)

	// A HOME with a ~/.databrickscfg, and a separate config file for
	// DATABRICKS_CONFIG_FILE.
	cfgHome := t.TempDir()
	cfg := "[DEFAULT]\nhost = " + s.host + "\ntoken = dapiCFG0123456789abcdef\n[other]\nhost = " + s.host + "\ntoken = dapiCFG0123456789abcdef\n"
	writeFile(t, filepath.Join(cfgHome, ".databrickscfg"), cfg)
	cfgFile := filepath.Join(t.TempDir(), "dbcfg")
	writeFile(t, cfgFile, cfg)
	missing := filepath.Join(t.TempDir(), "no-such-databrickscfg")
	garbled := filepath.Join(t.TempDir(), "garbled")
	writeFile(t, garbled, "this is not [an ini file\n")

	// Files that used to hang or explode every command: a FIFO at the
	// config path (named, or the default one), and a 16,000-deep header.
	fifo := filepath.Join(t.TempDir(), "config.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fifoHome := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fifoHome, ".config", "dbxtop"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fifoHome, ".config", "dbxtop", "config.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(t.TempDir(), "deep.toml")
	writeFile(t, deep, "["+strings.Repeat("a.", 15999)+"a]\n")

	const wrong = "dapiWRONG0123456789abcdef"
	cases := []badInput{
		{name: "host scheme", args: []string{"snapshot", "--host", "ftp://x"}, code: 3,
			exact: `dbxtop: invalid --host "ftp://x": scheme "ftp": want https:// (or http:// for a local simulator)`},
		{name: "host with path", args: []string{"snapshot", "--host", "https://adb-1.azuredatabricks.net/sql/1.0/warehouses/abc"}, code: 3,
			exact: `dbxtop: invalid --host "https://adb-1.azuredatabricks.net/sql/1.0/warehouses/abc": unexpected path "/sql/1.0/warehouses/abc": pass only the workspace URL (the warehouse path goes in --http-path)`},
		{name: "host port out of range", args: []string{"snapshot", "--host", "http://127.0.0.1:99999"}, code: 3,
			exact: `dbxtop: invalid --host "http://127.0.0.1:99999": port "99999" is not in 1-65535`},
		{name: "DATABRICKS_HOST bad", args: []string{"snapshot"}, env: []string{"DATABRICKS_HOST=ftp://x", "DATABRICKS_TOKEN=" + wrong}, code: 3,
			exact: `dbxtop: invalid DATABRICKS_HOST "ftp://x": scheme "ftp": want https:// (or http:// for a local simulator)`},
		{name: "unreachable host", args: []string{"snapshot", "--host", fmt.Sprintf("http://127.0.0.1:%d", closed), "--timeout", "10s"},
			env: []string{"DATABRICKS_TOKEN=" + wrong}, code: 3,
			// A listing request is retried for up to 15 s (docs/retry-policy.md):
			// the line says either the policy's give-up or the --timeout, with
			// the attempts made either way.
			contains: []string{"dbxtop snapshot: could not observe the workspace: ListQueries failed: ", " attempts in ",
				"transport: connection refused", "[error_code=none request_id=none]"},
			absent: []string{wrong}},
		{name: "wrong token", args: []string{"snapshot", "--host", s.host, "--timeout", "10s"},
			env: []string{"DATABRICKS_TOKEN=" + wrong}, code: 3,
			contains: []string{"dbxtop snapshot: could not observe the workspace: ListQueries failed: permanent after 1 attempt in ",
				"HTTP 401 UNAUTHENTICATED: credentials were refused by " + s.host + " (check the token, profile or OAuth login)",
				"[error_code=UNAUTHENTICATED request_id="},
			absent: []string{wrong, s.token}},
		{name: "empty token", args: []string{"snapshot", "--token", ""}, code: 3,
			exact: `dbxtop: invalid --token: the token must not be empty`},
		{name: "unknown profile in ~/.databrickscfg", args: []string{"snapshot", "-p", "prod"}, home: cfgHome, code: 3,
			exact: `dbxtop snapshot: could not observe: databricks profile "prod" not found in config file ` +
				filepath.Join(cfgHome, ".databrickscfg") + ` (profiles there: DEFAULT, other)`,
			absent: []string{"dapiCFG0123456789abcdef"}},
		{name: "unknown profile from env", args: []string{"snapshot"}, env: []string{"DATABRICKS_CONFIG_FILE=" + cfgFile, "DATABRICKS_CONFIG_PROFILE=prod"}, code: 3,
			exact:  `dbxtop snapshot: could not observe: databricks profile "prod" not found in config file ` + cfgFile + ` (profiles there: DEFAULT, other)`,
			absent: []string{"dapiCFG0123456789abcdef"}},
		{name: "missing config file", args: []string{"snapshot", "-p", "other"}, env: []string{"DATABRICKS_CONFIG_FILE=" + missing}, code: 3,
			exact: `dbxtop snapshot: could not observe: databricks profile "other": config file ` + missing + ` does not exist`},
		{name: "unreadable config file", args: []string{"snapshot", "-p", "other"}, env: []string{"DATABRICKS_CONFIG_FILE=" + garbled}, code: 3,
			exact: `dbxtop snapshot: could not observe: databricks profile "other": cannot read config file ` + garbled + `: key-value delimiter not found: this is not [an ini file`},
		{name: "config is a FIFO", args: []string{"snapshot", "--config", fifo}, code: 3,
			exact: "dbxtop: config file " + fifo + ": unreadable: not a regular file (a named pipe); dbxtop reads only regular files"},
		{name: "default config is a FIFO", args: []string{"snapshot"}, home: fifoHome, code: 3,
			contains: []string{"config.toml: unreadable: not a regular file (a named pipe)"}},
		{name: "config nested 16,000 deep", args: []string{"snapshot", "--config", deep}, code: 3,
			exact: "dbxtop: config file " + deep + ": line 1: a key nested 17 or more deep; dbxtop's keys are at most 16 deep (see docs/configuration.md)"},
		{name: "warehouse selection matching nothing", args: []string{"snapshot", "--host", s.host, "-w", "nope,typo"},
			env: []string{"DATABRICKS_TOKEN=" + s.token}, code: 3, absent: []string{s.token},
			contains: []string{"dbxtop snapshot: could not observe: --warehouse nope,typo matches none of the ", " SQL warehouses the workspace lists ("}},
		{name: "duration without unit", args: []string{"snapshot", "--refresh", "5"}, code: 3,
			exact: `dbxtop: invalid --refresh "5": missing unit: write e.g. 30s, 5m or 1h30m`},
		{name: "duration garbage", args: []string{"--inactivity-warn", "soon"}, code: 2,
			exact: `dbxtop: invalid --inactivity-warn "soon": not a duration: write e.g. 30s, 5m or 1h30m`},
		{name: "negative threshold", args: []string{"snapshot", "--leak-after", "-1m"}, code: 3,
			exact: `dbxtop: invalid --leak-after "-1m": must not be negative`},
		{name: "negative idle timeout", args: []string{"demo", "--server-idle-timeout", "-430s"}, code: 2,
			exact: `dbxtop: invalid --server-idle-timeout "-430s": must not be negative`},
		{name: "timeout too short", args: []string{"snapshot", "--timeout", "1ms"}, code: 3,
			exact: `dbxtop: invalid --timeout "1ms": must be at least 100ms`},
		{name: "count without watch", args: []string{"snapshot", "--count", "3"}, code: 3,
			exact: `dbxtop: invalid --count "3": only valid with --watch`},
		{name: "zero interval", args: []string{"snapshot", "--watch", "--interval", "0s"}, code: 3,
			exact: `dbxtop: invalid --interval "0s": must be greater than zero`},
		{name: "fault spec unknown kind", args: []string{"sim", "--faults", "reset=0.1,bogus=1"}, code: 2,
			exact: `dbxtop: invalid --faults "reset=0.1,bogus=1": item "bogus=1": unknown kind "bogus" (reset, stale, throttle, throttle-bare, unavailable, gateway, exhausted, quota, latency)`},
		{name: "fault probability", args: []string{"sim", "--faults", "stale=0.2,reset=2"}, code: 2,
			exact: `dbxtop: invalid --faults "stale=0.2,reset=2": item "reset=2": reset wants a probability between 0 and 1`},
		{name: "fault latency", args: []string{"demo", "--faults", "latency=fast"}, code: 2,
			exact: `dbxtop: invalid --faults "latency=fast": item "latency=fast": latency wants a duration such as 250ms`},
		{name: "fault call", args: []string{"sim", "--faults", "reset=0.1@GetStatus"}, code: 2,
			exact: `dbxtop: invalid --faults "reset=0.1@GetStatus": item "reset=0.1@GetStatus": unknown call "GetStatus" (a Thrift RPC name such as GetOperationStatus, or an SDK method such as ListQueries)`},
		{name: "fault empty item", args: []string{"sim", "--faults", "reset=0.1,,stale=1"}, code: 2,
			exact: `dbxtop: invalid --faults "reset=0.1,,stale=1": empty item in the comma list`},
		{name: "sim port in use", args: []string{"sim", "--listen", fmt.Sprintf("127.0.0.1:%d", held)}, code: 1,
			exact: fmt.Sprintf(`dbxtop sim: listening on 127.0.0.1:%d: listen tcp 127.0.0.1:%d: bind: address already in use (is the port in use? try --listen 127.0.0.1:0)`, held, held)},
		{name: "sim listen without port", args: []string{"sim", "--listen", "localhost"}, code: 2,
			exact: `dbxtop: invalid --listen "localhost": want host:port, e.g. 127.0.0.1:8080 (port 0 picks a free one)`},
		{name: "unknown scenario", args: []string{"sim", "--scenario", "chaos"}, code: 2,
			exact: `dbxtop: invalid --scenario "chaos": must be one of demo, quiet, load, vector-incident`},
		{name: "ops without load", args: []string{"demo", "--ops", "500"}, code: 2,
			exact: `dbxtop: invalid --ops "500": only valid with --scenario load`},
		{name: "demo with a real host", args: []string{"demo", "--host", "https://adb-1.azuredatabricks.net"}, code: 2,
			exact: "dbxtop: invalid --host \"https://adb-1.azuredatabricks.net\": demo runs its own simulated workspace; use `dbxtop --host` for a real one"},
		{name: "log file in a missing directory", args: []string{"snapshot", "--log-file", "/nonexistent-dbxtop/x.log"}, code: 3,
			exact: `dbxtop: invalid --log-file "/nonexistent-dbxtop/x.log": directory "/nonexistent-dbxtop" does not exist`},
		{name: "warehouse id", args: []string{"-w", "abc 123"}, code: 2,
			exact: `dbxtop: invalid --warehouse "abc 123": a warehouse id is letters, digits, '-' and '_' (see the warehouse's Connection details)`},
		{name: "http-path with two warehouses", args: []string{"snapshot", "-w", "a,b", "--http-path", "/sql/1.0/warehouses/a"}, code: 3,
			exact: `dbxtop: invalid --http-path "/sql/1.0/warehouses/a": names one warehouse but 2 --warehouse ids were given`},
		{name: "bool flag value", args: []string{"--read-only=maybe"}, code: 2,
			exact: `dbxtop: invalid --read-only "maybe": must be true or false`},
		{name: "unknown flag", args: []string{"snapshot", "--jsn"}, code: 3,
			exact: `dbxtop: unknown flag: --jsn (see dbxtop snapshot --help)`},
		{name: "unknown command", args: []string{"top"}, code: 2,
			exact: `dbxtop: unknown command or argument "top" for "dbxtop" (see dbxtop --help)`},
		{name: "TUI to a file", args: []string{"--host", s.host}, env: []string{"DATABRICKS_TOKEN=" + s.token}, toFile: true, code: 2,
			exact: "dbxtop: " + nonTTY, absent: []string{s.token}},
		{name: "demo to a file", args: []string{"demo"}, toFile: true, code: 2,
			exact: "dbxtop demo: " + nonTTY},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := runOpts{args: tc.args, env: tc.env, home: tc.home, timeout: 30 * time.Second}
			var outPath string
			if tc.toFile {
				outPath = filepath.Join(t.TempDir(), "out")
				f, err := os.Create(outPath)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				o.stdout = f
			}
			r := run(t, o)
			if tc.toFile {
				b, err := os.ReadFile(outPath)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) != 0 {
					t.Errorf("the UI wrote %d bytes into a file: %q", len(b), b)
				}
			}
			checkBadInput(t, tc, r)
		})
	}
}

func checkBadInput(t *testing.T, tc badInput, r result) {
	t.Helper()
	if r.code != tc.code {
		t.Errorf("exit %d, want %d", r.code, tc.code)
	}
	noStackTrace(t, "stderr", r.stderr)
	noStackTrace(t, "stdout", r.stdout)
	ls := lines(r.stderr)
	if len(ls) != 1 {
		t.Fatalf("want exactly one line on stderr, got %d:\n%s", len(ls), r)
	}
	if tc.exact != "" && ls[0] != tc.exact {
		t.Errorf("stderr:\n got %s\nwant %s", ls[0], tc.exact)
	}
	for _, s := range tc.contains {
		if !strings.Contains(ls[0], s) {
			t.Errorf("stderr %q lacks %q", ls[0], s)
		}
	}
	for _, s := range tc.absent {
		if strings.Contains(r.stderr, s) || strings.Contains(r.stdout, s) {
			t.Errorf("output contains %q:\n%s", s, r)
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
