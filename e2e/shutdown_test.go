package e2e

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shutdownBound is how long dbxtop may take to exit after SIGINT/SIGTERM.
const shutdownBound = 5 * time.Second

// TestSnapshotWatchSignals: SIGINT and SIGTERM to `dbxtop snapshot --watch`
// end it promptly, with a Nagios exit status, and stdout holds only whole
// JSON lines — also when the signal lands in the middle of a round (the
// "slow" cases: every request takes 400 ms, so a round is in flight).
func TestSnapshotWatchSignals(t *testing.T) {
	t.Parallel()
	budget(t)
	cases := []struct {
		name   string
		sig    syscall.Signal
		faults string
	}{
		{"SIGINT", syscall.SIGINT, ""},
		{"SIGTERM", syscall.SIGTERM, ""},
		{"SIGINT mid-round", syscall.SIGINT, "latency=400ms"},
		{"SIGTERM mid-round", syscall.SIGTERM, "latency=400ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			args := []string{"--scenario", "demo", "--token", "dapiSHUT0123456789abcdef"}
			if tc.faults != "" {
				args = append(args, "--faults", tc.faults)
			}
			s := startSim(t, home, args...)
			interval := "1s"
			if tc.faults != "" {
				interval = "100ms" // the next round starts at once and is slow
			}
			p := start(t, home, []string{"DATABRICKS_TOKEN=" + s.token},
				"snapshot", "--host", s.host, "--watch", "--interval", interval, "--timeout", "20s")
			p.waitFirstLine(30 * time.Second)
			code, took := p.signalAndWait(tc.sig, shutdownBound)
			t.Logf("%s: exit %d, %s after the signal", tc.name, code, took.Round(time.Millisecond))
			if code < 0 || code > 3 {
				t.Errorf("exit %d: want a Nagios status 0..3", code)
			}
			out := p.stdout.String()
			if !strings.HasSuffix(out, "\n") {
				t.Errorf("stdout ends with a partial line: %q", tail(out, 200))
			}
			n := 0
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				var doc struct{ Schema string }
				if err := json.Unmarshal([]byte(l), &doc); err != nil || doc.Schema != "dbxtop.snapshot/v1" {
					t.Errorf("line %d is not a whole snapshot (%v): %q", n+1, err, tail(l, 200))
				}
				n++
			}
			if n < 1 {
				t.Error("no JSON line")
			}
			noStackTrace(t, "stderr", p.stderr.String())
			code, took = s.signalAndWait(syscall.SIGTERM, shutdownBound)
			if code != 0 || !strings.Contains(s.stderr.String(), "dbxtop sim: stopped") {
				t.Errorf("sim: exit %d after %s, stderr %q", code, took, s.stderr)
			}
		})
	}
}

// TestSimSignals: `dbxtop sim` stops on SIGTERM and SIGINT with exit 0 and
// says so; clients see the port closed afterwards.
func TestSimSignals(t *testing.T) {
	t.Parallel()
	budget(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			s := startSim(t, home, "--scenario", "demo")
			// A client is mid-conversation when the signal comes.
			r := run(t, runOpts{args: []string{"snapshot", "--host", s.host, "--json", "--timeout", "10s"}, home: home,
				env: []string{"DATABRICKS_TOKEN=" + s.token}})
			if r.code > 2 {
				t.Fatalf("snapshot against the sim: %s", r)
			}
			code, took := s.signalAndWait(sig, shutdownBound)
			t.Logf("sim %s: exit %d after %s", sig, code, took.Round(time.Millisecond))
			if code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			if got := lines(s.stderr.String()); len(got) != 1 || got[0] != "dbxtop sim: stopped" {
				t.Errorf("stderr %q, want exactly \"dbxtop sim: stopped\"", got)
			}
			r = run(t, runOpts{args: []string{"snapshot", "--host", s.host, "--timeout", "2s"}, home: home,
				env: []string{"DATABRICKS_TOKEN=" + s.token}})
			if r.code != 3 || !strings.Contains(r.stderr, "connection refused") {
				t.Errorf("after stop, want exit 3 and connection refused: %s", r)
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestDemoSignals: SIGTERM and SIGINT (kill, not ^C: the terminal is in
// raw mode) end `dbxtop demo` on a real terminal promptly, exit 0, with
// nothing on stderr. Bubble Tea v1.3.10 could hang here (see
// cmd/wire.go signalSafeUIContext).
func TestDemoSignals(t *testing.T) {
	t.Parallel()
	budget(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			s := startTmux(t, 100, 30, home, home, "demo", "--no-color", "--refresh", "500ms")
			s.waitScreen("operations", 30*time.Second, func(scr string) bool {
				return strings.Contains(scr, "RUNNING") || strings.Contains(scr, "FINISHED")
			})
			sent := time.Now()
			s.signal(sig)
			code, stderr := s.waitExit(shutdownBound)
			t.Logf("demo %s: exit %d within %s", sig, code, time.Since(sent).Round(10*time.Millisecond))
			if code != 0 || stderr != "" {
				t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr)
			}
		})
	}
}
