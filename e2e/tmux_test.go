package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tmuxSeq numbers the private tmux servers of this process.
var tmuxSeq atomic.Int64

// tmuxSession runs the real binary on a real pseudo-terminal: a private
// tmux server (its own socket, so it never touches anyone's sessions) with
// one session of the given size.
type tmuxSession struct {
	t      *testing.T
	socket string
}

// startTmux runs `dbxtop args…` in a new detached tmux session of w×h
// cells, with a clean environment and dir as working directory. It skips
// the test when tmux is not installed.
func startTmux(t *testing.T, w, h int, home, dir string, args ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("dbxtop-e2e-%d-%d", os.Getpid(), tmuxSeq.Add(1))}
	// env -i: the session gets exactly this environment, not the tmux
	// server's. exec: the pane's process is dbxtop itself.
	cmd := []string{"env", "-i", "PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=xterm-256color", "LANG=C.UTF-8", bin}
	cmd = append(cmd, args...)
	s.tmux("-f", "/dev/null", "new-session", "-d", "-s", "e2e", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", dir, shellJoin(cmd))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is the pane's visible text.
func (s *tmuxSession) screen() string {
	s.t.Helper()
	out, err := exec.Command("tmux", "-L", s.socket, "capture-pane", "-p", "-t", "e2e").CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

// keys sends key names (tmux send-keys syntax).
func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", "e2e"}, keys...)...)
}

// waitScreen polls the pane until ok(screen) or the timeout. A terminal
// offers no event to wait on, so this is a bounded poll, not a sleep that
// hopes the program is fast enough.
func (s *tmuxSession) waitScreen(what string, timeout time.Duration, ok func(string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		scr := s.screen()
		if ok(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("screen never showed %s within %s; last screen:\n%s", what, timeout, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExit waits (bounded) for the session's program to exit.
func (s *tmuxSession) waitExit(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for exec.Command("tmux", "-L", s.socket, "has-session", "-t", "e2e").Run() == nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("still running %s after quitting; screen:\n%s", timeout, s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shellJoin quotes args for the shell tmux runs the command with.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// TestTerminalTooSmall is the bad input "terminal too small", on a real
// terminal: at 70×20 the TUI says what it needs instead of drawing a
// broken table, and still quits on q. (The rendering itself is golden-
// tested in tui.TestGoldenTooSmall.)
func TestTerminalTooSmall(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := startTmux(t, 70, 20, home, home, "demo", "--scenario", "quiet", "--no-color")
	want := "terminal too small: 70×20, dbxtop needs at least 80×24"
	scr := s.waitScreen("the too-small message", 20*time.Second, func(s string) bool { return strings.Contains(s, want) })
	noStackTrace(t, "screen", scr)
	s.keys("q")
	s.waitExit(10 * time.Second)
}
