package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Recognisable tokens: the right one and a wrong one. Each is searched in
// full and by a distinctive middle part, so that a truncated or partly
// masked echo ("dapiSECRET0123…") is caught too.
const (
	secretToken = "dapiSECRET0123456789abcdef"
	wrongToken  = "dapiWRONGSECRET9876543210fedcba"
)

var secretNeedles = []string{secretToken, "SECRET0123456789", wrongToken, "WRONGSECRET98765"}

// outputs collects every byte dbxtop wrote, by origin, for the search.
type outputs struct {
	mu   sync.Mutex
	list []output
}

type output struct{ name, text string }

func (o *outputs) add(name, text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, output{name, text})
}

func (o *outputs) addRun(name string, r result) {
	o.add(name+" stdout", r.stdout)
	o.add(name+" stderr", r.stderr)
}

func (o *outputs) addFile(t *testing.T, name, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	o.add(name, string(b))
	return string(b)
}

// check fails for every output that holds a needle; it returns how many
// bytes were searched.
func (o *outputs) check(t *testing.T) int {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, out := range o.list {
		n += len(out.text)
		for _, needle := range secretNeedles {
			if strings.Contains(out.text, needle) {
				t.Errorf("%s contains %q:\n%s", out.name, needle, out.text)
			}
		}
	}
	return n
}

// simOutputs adds a stopped simulator's output, minus exactly its first
// stdout line: `host=… token=…` prints the token by contract (that line is
// how a script learns it). It asserts that line is the only one with it.
func simOutputs(t *testing.T, o *outputs, name string, s *simProc) {
	t.Helper()
	first, rest, _ := strings.Cut(s.stdout.String(), "\n")
	if !strings.Contains(first, "token="+secretToken) {
		t.Fatalf("%s first line %q does not carry the token (the search would be vacuous)", name, first)
	}
	o.add(name+" stdout after the first line", rest)
	o.add(name+" stderr", s.stderr.String())
}

func stopSim(t *testing.T, s *simProc) {
	t.Helper()
	if code, _ := s.signalAndWait(syscall.SIGTERM, 10*time.Second); code != 0 {
		t.Errorf("sim exit %d\nstderr:\n%s", code, s.stderr)
	}
}

// TestSecretsNeverPrinted runs every command with a recognisable token and
// searches all that dbxtop wrote — stdout, stderr, --log-file, the
// exported files and the TUI's screen — for it.
func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	budget(t)
	var outs outputs
	home := t.TempDir()
	env := []string{"DATABRICKS_TOKEN=" + secretToken}

	s := startSim(t, home, "--token", secretToken, "--seed", "7")
	host := s.host
	logFile := filepath.Join(home, "snapshot.log")

	runs := []struct {
		name string
		o    runOpts
	}{
		{"snapshot table", runOpts{args: []string{"snapshot", "--host", host, "--timeout", "10s"}, env: env}},
		{"snapshot json", runOpts{args: []string{"snapshot", "--host", host, "--json", "--timeout", "10s"}, env: env}},
		{"snapshot watch", runOpts{args: []string{"snapshot", "--host", host, "--watch", "--interval", "200ms", "--count", "2", "--timeout", "10s"}, env: env}},
		{"snapshot log-file", runOpts{args: []string{"snapshot", "--host", host, "--json", "--log-file", logFile, "--timeout", "10s", "--capacity-probe"}, env: env}},
		{"snapshot --token flag", runOpts{args: []string{"snapshot", "--host", host, "--token", secretToken, "--json", "--timeout", "10s"}}},
		{"snapshot wrong token", runOpts{args: []string{"snapshot", "--host", host, "--log-file", logFile, "--timeout", "10s"}, env: []string{"DATABRICKS_TOKEN=" + wrongToken}}},
		{"snapshot wrong --token flag", runOpts{args: []string{"snapshot", "--host", host, "--token", wrongToken, "--json", "--timeout", "10s"}}},
		{"version", runOpts{args: []string{"version"}, env: env}},
		{"help", runOpts{args: []string{"snapshot", "--help"}, env: env}},
	}
	for _, r := range runs {
		r.o.home = home
		res := run(t, r.o)
		outs.addRun(r.name, res)
		switch r.name {
		case "snapshot json", "snapshot log-file":
			var doc struct{ Schema string }
			if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || doc.Schema != "dbxtop.snapshot/v1" {
				t.Errorf("%s: not a snapshot (%v):\n%s", r.name, err, res)
			}
		case "snapshot watch":
			if n := len(lines(res.stdout)); n != 2 {
				t.Errorf("watch printed %d lines, want 2:\n%s", n, res)
			}
		case "snapshot wrong token", "snapshot wrong --token flag":
			if res.code != 3 || !strings.Contains(res.stderr, "credentials were refused") {
				t.Errorf("%s: want exit 3 and the refusal:\n%s", r.name, res)
			}
		case "version":
			if !strings.HasPrefix(res.stdout, "dbxtop ") {
				t.Errorf("version: %s", res)
			}
		}
	}
	if log := outs.addFile(t, "--log-file", logFile); log == "" {
		t.Error("--log-file is empty: the wrong token's refusal was not logged")
	}

	t.Run("faults", func(t *testing.T) { secretsUnderFaults(t, &outs) })
	t.Run("demo", func(t *testing.T) { secretsInDemo(t, &outs) })

	stopSim(t, s)
	simOutputs(t, &outs, "sim", s)
	n := outs.check(t)
	t.Logf("searched %d outputs, %d bytes, for %d needles", len(outs.list), n, len(secretNeedles))
}

// secretsUnderFaults gives a simulator each fault kind of docs/simulator.md (Fault injection)
// and runs a short snapshot against it, with a --log-file: retries,
// give-ups and error bodies are where a careless error text would echo a
// request header.
func secretsUnderFaults(t *testing.T, outs *outputs) {
	faults := []string{"reset=1", "stale=1", "throttle=1", "throttle-bare=1", "unavailable=1",
		"gateway=1", "quota=1", "exhausted=vs-ingest", "latency=50ms",
		"reset=0.3,stale=0.3,throttle=0.2,unavailable=0.2,gateway=0.2,latency=20ms"}
	for _, f := range faults {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			s := startSim(t, home, "--token", secretToken, "--faults", f, "--seed", "3")
			logFile := filepath.Join(home, "faults.log")
			runs := [][]string{
				{"snapshot", "--host", s.host, "--json", "--timeout", "3s", "--log-file", logFile, "--capacity-probe"},
				{"snapshot", "--host", s.host, "--timeout", "3s", "--log-file", logFile},
			}
			if os.Getenv("DBXTOP_LONG") == "1" {
				// The long variant watches each fault for about a minute.
				runs = append(runs, []string{"snapshot", "--host", s.host, "--watch", "--interval", "1s", "--count", "30",
					"--timeout", "5s", "--log-file", logFile, "--capacity-probe"})
			}
			for _, args := range runs {
				r := run(t, runOpts{args: args, home: home, env: []string{"DATABRICKS_TOKEN=" + secretToken}, timeout: 5 * time.Minute})
				outs.addRun("fault "+f+" "+strings.Join(args[3:], " "), r)
				noStackTrace(t, "stderr", r.stderr)
				if r.code < 0 || r.code > 3 {
					t.Errorf("exit %d outside the Nagios range", r.code)
				}
			}
			if _, err := os.Stat(logFile); err == nil {
				outs.addFile(t, "fault "+f+" --log-file", logFile)
			}
			stopSim(t, s)
			simOutputs(t, outs, "sim --faults "+f, s)
		})
	}
}

// secretsInDemo runs `dbxtop demo` with the token on a real terminal
// (tmux), captures every view, exports (e) and reads the exported files.
func secretsInDemo(t *testing.T, outs *outputs) {
	home := t.TempDir()
	dir := t.TempDir() // the export lands in the working directory
	logFile := filepath.Join(home, "demo.log")
	s := startTmux(t, 120, 40, home, dir, "demo", "--token", secretToken, "--refresh", "500ms",
		"--log-file", logFile, "--faults", "reset=0.2,throttle=0.1", "--no-color")
	outs.add("demo screen (operations)", s.waitScreen("operations", 30*time.Second, func(scr string) bool {
		return strings.Contains(scr, "RUNNING") || strings.Contains(scr, "FINISHED")
	}))
	s.keys("e")
	outs.add("demo screen (export)", s.waitScreen("the export status", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "exported")
	}))
	// One key at a time, each awaited on screen: keys that reach the
	// program in one read arrive as one multi-rune key (bubbletea), which
	// no binding matches.
	for _, k := range []struct{ key, view string }{{"Tab", "[Endpoints]"}, {"Tab", "[Events]"}, {"?", "[Help]"}} {
		s.keys(k.key)
		outs.add("demo screen "+k.view, s.waitScreen(k.view, 10*time.Second, func(scr string) bool {
			return strings.Contains(scr, k.view)
		}))
	}
	s.keys("q")
	code, stderr := s.waitExit(15 * time.Second)
	outs.add("demo stderr", stderr)
	if code != 0 {
		t.Errorf("demo exit %d; stderr:\n%s", code, stderr)
	}

	files, err := filepath.Glob(filepath.Join(dir, "dbxtop-*"))
	if err != nil || len(files) != 2 {
		t.Fatalf("export wrote %v (%v), want a JSON and a Markdown file", files, err)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() == 0 {
			t.Errorf("%s: %v mode %v", f, err, fi.Mode())
		}
		outs.addFile(t, "export "+filepath.Base(f), f)
	}
	if _, err := os.Stat(logFile); err == nil {
		outs.addFile(t, "demo --log-file", logFile)
	}
}
