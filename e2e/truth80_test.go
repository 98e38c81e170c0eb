package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestNoWorkspaceFailsFast: plain `dbxtop` in a real 80×24 terminal with
// no host and no credentials exits 2 at once with one line that names
// what is missing and suggests the demo, instead of taking the terminal
// over with a screen that cannot clear; `snapshot` says the same line and
// exits 3 (UNKNOWN).
func TestNoWorkspaceFailsFast(t *testing.T) {
	t.Parallel()
	budget(t)
	home := t.TempDir()
	s := startTmux(t, 80, 24, home, home)
	code, stderr := s.waitExit(20 * time.Second)
	line := strings.TrimSpace(stderr)
	if code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, "no host") || !strings.Contains(line, "dbxtop demo") {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming the host and the demo", code, stderr)
	}
	r := run(t, runOpts{args: []string{"snapshot"}, home: home})
	if r.code != 3 || strings.TrimSpace(r.stderr) != strings.Replace(line, "dbxtop:", "dbxtop snapshot:", 1) {
		t.Fatalf("snapshot: want exit 3 and the same line as the TUI (%q)\n%s", line, r)
	}
	r = run(t, runOpts{args: []string{"snapshot"}, home: home, env: []string{"DATABRICKS_HOST=https://example.cloud.databricks.com"}})
	if r.code != 3 || !strings.Contains(r.stderr, "no credentials for https://example.cloud.databricks.com") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Fatalf("snapshot without credentials:\n%s", r)
	}
}

// TestAttachSaysServeIsDown: `dbxtop attach` at 80×24 whose serve dies
// says so in its header (data as of …, serve down) instead of showing
// frozen ages as if they were live.
func TestAttachSaysServeIsDown(t *testing.T) {
	t.Parallel()
	budget(t)
	home := t.TempDir()
	sim := startSim(t, home, "--scenario", "quiet")
	srv := start(t, home, []string{"DATABRICKS_TOKEN=" + sim.token}, "serve", "--host", sim.host,
		"--listen", "127.0.0.1:0", "--refresh", "500ms")
	var listen, token string
	if n, _ := fmt.Sscanf(srv.waitFirstLine(30*time.Second), "listen=%s token=%s", &listen, &token); n != 2 {
		t.Fatal("serve's first line")
	}
	s := startTmuxEnv(t, 80, 24, home, home, "", []string{"DBXTOP_SERVE_TOKEN=" + token}, "attach", listen)
	s.waitScreen("attach showing serve's data", 30*time.Second, func(scr string) bool {
		return strings.Contains(scr, "[Operations]") && strings.Contains(scr, "last error")
	})
	if code, _ := srv.signalAndWait(syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Logf("serve exited %d", code)
	}
	scr := s.waitScreen("the serve-down banner", 30*time.Second, func(scr string) bool {
		return strings.Contains(scr, "serve down:")
	})
	if !regexp.MustCompile(`data as of \d\d:\d\d:\d\d — serve down: `).MatchString(scr) {
		t.Fatalf("banner:\n%s", scr)
	}
	s.keys("q")
	if code, stderr := s.waitExit(15 * time.Second); code != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestCopyUnderTmuxDefaults: with tmux's default set-clipboard external
// (which ignores programs' copies) y at 80×24 says tmux drops it and how
// to enable it, and no tmux buffer appears. The option is set in the
// server's config rather than read from this tmux's defaults, so the test
// runs whatever version is installed.
func TestCopyUnderTmuxDefaults(t *testing.T) {
	t.Parallel()
	budget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Token: "dapiCOPY0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close(context.Background()) }()
	owner, err := thrift.NewClient(thrift.Options{Host: srv.URL(), Token: srv.Token(), UserAgent: "e2e-owner"})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.CloseIdleConnections()
	sess, err := owner.OpenSession(ctx, srv.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := owner.Execute(ctx, sess, "SELECT sleep(60)", false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.CancelOperation(context.Background(), op.Ref) }()
	home := t.TempDir()
	conf := filepath.Join(home, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g set-clipboard external\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startTmuxEnv(t, 80, 24, home, home, conf, []string{"DATABRICKS_HOST=" + srv.URL(), "DATABRICKS_TOKEN=" + srv.Token()}, "--no-color", "--refresh", "1s")
	if v := strings.TrimSpace(s.tmux("show-options", "-gv", "set-clipboard")); v != "external" {
		t.Fatalf("tmux set-clipboard is %q after the config set it to external", v)
	}
	s.waitScreen("the running statement selected", 30*time.Second, func(scr string) bool { return strings.Contains(scr, "❯ ") && strings.Contains(scr, "RUNNING") })
	s.keys("y")
	s.waitScreen("the copy status", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "copy id: tmux drops it (set-clipboard external); enable: set -g set-clipboard on")
	})
	if b := s.tmux("list-buffers"); b != "" {
		t.Errorf("a tmux buffer appeared: %q", b)
	}
	s.keys("q")
	if code, stderr := s.waitExit(15 * time.Second); code != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestDemoActsOnlyThroughItsClients: `dbxtop demo` left alone at 80×24
// past its first minute (the scripted closes of old happened at 30–35 s)
// never records an operator action: only its simulated clients act. The
// demo's own timeline says when the window is over: vs-prod fills to
// EXHAUSTED after it (about 65 s in), so the test waits for that event
// instead of sleeping for a fixed time.
func TestDemoActsOnlyThroughItsClients(t *testing.T) {
	t.Parallel()
	budget(t)
	home := t.TempDir()
	s := startTmux(t, 80, 24, home, home, "demo", "--no-color")
	s.waitScreen("the demo's first flags", 60*time.Second, func(scr string) bool { return strings.Contains(scr, "UNCLOSED") })
	s.keys("Tab", "Tab") // Events
	s.keys("-l", "/EXHAUSTED")
	s.waitScreen("the EXHAUSTED event, past the window in which the old script acted", 3*time.Minute, func(scr string) bool {
		return strings.Contains(scr, "/EXHAUSTED_") && !strings.Contains(scr, "no event matches")
	})
	s.keys("Escape")
	s.waitScreen("the filter cleared", 10*time.Second, func(scr string) bool { return !strings.Contains(scr, "/EXHAUSTED_") })
	s.keys("-l", "/requested by")
	scr := s.waitScreen("the Events filter", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "/requested by_") })
	if !strings.Contains(scr, `no event matches "requested by"`) {
		t.Fatalf("an operator action nobody took:\n%s", scr)
	}
	s.keys("Escape")
	// Separately: ESC and q in one read would be alt+q.
	s.waitScreen("the prompt closed", 10*time.Second, func(scr string) bool { return !strings.Contains(scr, "/requested by_") })
	s.keys("q")
	if code, stderr := s.waitExit(15 * time.Second); code != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
