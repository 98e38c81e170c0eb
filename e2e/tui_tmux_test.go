package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// hostileSQL tries to retitle the terminal, write the clipboard and clear
// the screen through dbxtop's Operations list.
const hostileSQL = "SELECT 'x' /* \x1b]0;pwned-title\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J */"

// TestTUIOperatorInTmux drives the real binary against the simulator in a
// real terminal: a hostile statement reaches neither the pane title nor a
// tmux buffer; `jjj` moves three rows; y creates a tmux buffer (tmux with
// set-clipboard on); / in Endpoints does not quit; read-only refusal and
// the wrong-token banner are visible at 80×24.
func TestTUIOperatorInTmux(t *testing.T) {
	t.Parallel()
	budget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Token: "dapiTUI0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = srv.Close(sctx)
	}()
	owner, err := thrift.NewClient(thrift.Options{Host: srv.URL(), Token: srv.Token(), UserAgent: "e2e-owner"})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.CloseIdleConnections()
	sess, err := owner.OpenSession(ctx, srv.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT sleep(60)", "SELECT sleep(61)", "SELECT sleep(62)", "SELECT sleep(63)", hostileSQL} {
		op, err := owner.Execute(ctx, sess, q, false)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = owner.CancelOperation(context.Background(), op.Ref) }()
	}
	home := t.TempDir()
	conf := filepath.Join(home, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g set-clipboard on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"DATABRICKS_HOST=" + srv.URL(), "DATABRICKS_TOKEN=" + srv.Token()}

	t.Run("hostile text, jjj, copy", func(t *testing.T) {
		s := startTmuxEnv(t, 120, 30, home, home, conf, env, "--no-color", "--refresh", "1s")
		title := s.tmux("display-message", "-p", "-t", "e2e", "#{pane_title}")
		s.waitScreen("five operations", 30*time.Second, func(scr string) bool { return strings.Count(scr, "RUNNING") >= 5 })
		scr := s.screen()
		if got := s.tmux("display-message", "-p", "-t", "e2e", "#{pane_title}"); got != title {
			t.Errorf("pane title changed from %q to %q", title, got)
		}
		if b := s.tmux("list-buffers"); b != "" {
			t.Errorf("a tmux buffer appeared from server text: %q", b)
		}
		if !strings.Contains(scr, "␛") {
			t.Errorf("the hostile statement's escapes are not shown as ␛:\n%s", scr)
		}
		before := cursorRow(scr)
		s.keys("-l", "jjj") // one write: Bubble Tea reads "jjj" as one key message
		s.waitScreen("the cursor three rows down", 10*time.Second, func(scr string) bool { return cursorRow(scr) == before+3 })
		s.keys("y")
		s.waitScreen("the copy status", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "copy id: sent") })
		buf := s.tmux("show-buffer")
		if !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(strings.TrimSpace(buf)) {
			t.Errorf("tmux buffer %q is not a statement id", buf)
		}
		s.keys("q")
		if code, stderr := s.waitExit(15 * time.Second); code != 0 {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("slash in Endpoints does not quit; read-only refusal at 80x24", func(t *testing.T) {
		s := startTmuxEnv(t, 80, 24, home, home, "", env, "--read-only", "--refresh", "1s")
		s.waitScreen("operations", 30*time.Second, func(scr string) bool { return strings.Contains(scr, "RUNNING") })
		s.keys("x")
		s.waitScreen("the refusal", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "read-only: cancel refused") })
		s.keys("Tab", "/", "q")
		s.waitScreen("q typed into the filter", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "/q_") })
		if err := exec.Command("tmux", "-L", s.socket, "has-session", "-t", "e2e").Run(); err != nil {
			t.Fatal("/ then q quit the program")
		}
		s.keys("Escape")
		// Separately: ESC and q in one read would be alt+q.
		s.waitScreen("the prompt closed", 10*time.Second, func(scr string) bool { return !strings.Contains(scr, "/q_") })
		s.keys("q")
		if code, stderr := s.waitExit(15 * time.Second); code != 0 {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("a warehouse selection that matches none is said", func(t *testing.T) {
		s := startTmuxEnv(t, 80, 24, home, home, "", env, "--warehouse", "nomatch0", "--refresh", "1s")
		want := fmt.Sprintf("--warehouse nomatch0 matches none of the %d SQL warehouses in this workspace", len(srv.AllWarehouseIDs()))
		s.waitScreen("the empty-selection message", 30*time.Second, func(scr string) bool {
			return strings.Contains(strings.Join(strings.Fields(scr), " "), want) && !strings.Contains(scr, "no operations on")
		})
		// It is an error too (snapshot exits 3 for it), and the TUI keeps running.
		s.waitScreen("the selection as the last error", 30*time.Second, func(scr string) bool {
			return strings.Contains(scr, "last error") && strings.Contains(scr, "ListWarehouses: permanent: --warehouse nomatch0")
		})
		s.keys("q")
		if code, stderr := s.waitExit(15 * time.Second); code != 0 {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("ctrl+z suspends to the shell; fg resumes with a redraw and working keys", func(t *testing.T) {
		s := startTmuxShell(t, 100, 30, home, env)
		s.typeLine(shellJoin([]string{bin, "--no-color", "--refresh", "1s"}))
		// The five statements' rows (by their user: the earlier subtests
		// take time, so some may have finished, still open, by now).
		rows := func(scr string) int { return strings.Count(scr, "token-user") }
		s.waitScreen("five operations", 30*time.Second, func(scr string) bool { return rows(scr) >= 5 })
		s.keys("C-z")
		s.waitScreen("the job stopped and the prompt back", 15*time.Second, func(scr string) bool {
			return strings.Contains(scr, "Stopped") && strings.HasSuffix(strings.TrimRight(scr, "\n "), shellPrompt) && rows(scr) == 0
		})
		if st := s.jobState(); !strings.HasPrefix(st, "T") {
			t.Fatalf("after ctrl+z the program's state is %q, want stopped (T)", st)
		}
		s.typeLine("fg")
		scr := s.waitScreen("the TUI redrawn", 15*time.Second, func(scr string) bool {
			return strings.HasPrefix(scr, "dbxtop ") && rows(scr) >= 5 && strings.Contains(scr, "❯")
		})
		if st := s.jobState(); strings.HasPrefix(st, "T") {
			t.Fatalf("after fg the program's state is still %q", st)
		}
		before := cursorRow(scr)
		s.keys("-l", "jjj")
		s.waitScreen("the cursor three rows down after resuming", 10*time.Second, func(scr string) bool { return cursorRow(scr) == before+3 })
		s.keys("q")
		s.waitScreen("the prompt after quitting", 15*time.Second, func(scr string) bool {
			return strings.HasSuffix(strings.TrimRight(scr, "\n "), shellPrompt)
		})
		s.typeLine("echo rc=$?")
		s.waitScreen("the exit status", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "rc=0") })
	})

	t.Run("wrong token banner", func(t *testing.T) {
		bad := []string{"DATABRICKS_HOST=" + srv.URL(), "DATABRICKS_TOKEN=dapiWRONG0123456789abcdef"}
		s := startTmuxEnv(t, 80, 24, home, home, "", bad, "--refresh", "1s")
		s.waitScreen("the 401 banner", 30*time.Second, func(scr string) bool {
			return strings.Contains(scr, "401: the token was refused") && strings.Contains(scr, "DATABRICKS_TOKEN")
		})
		s.keys("q")
		s.waitExit(15 * time.Second)
	})
}

// cursorRow is the screen line of the selected row (marked ❯), or -1.
func cursorRow(scr string) int {
	for i, l := range strings.Split(scr, "\n") {
		if strings.HasPrefix(l, "❯") {
			return i
		}
	}
	return -1
}
