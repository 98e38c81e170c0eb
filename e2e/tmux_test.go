package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
)

// tmuxSeq numbers the private tmux servers of this process.
var tmuxSeq atomic.Int64

// tmuxSession runs the real binary on a real pseudo-terminal: a private
// tmux server (its own socket, so it never touches anyone's sessions) with
// one session of the given size.
type tmuxSession struct {
	t      *testing.T
	socket string
	// stderrPath receives the program's stderr (which would otherwise be
	// drawn into the pane and lost when it closes); statusPath its exit
	// status once it has exited.
	stderrPath, statusPath string
}

// startTmux runs `dbxtop args…` in a new detached tmux session of w×h
// cells, with a clean environment and dir as working directory. It skips
// the test when tmux is not installed.
func startTmux(t *testing.T, w, h int, home, dir string, args ...string) *tmuxSession {
	t.Helper()
	return startTmuxEnv(t, w, h, home, dir, "", nil, args...)
}

// startTmuxEnv is startTmux with a tmux config file ("" for none, so the
// server's options are set before the program starts) and extra
// environment (KEY=value).
func startTmuxEnv(t *testing.T, w, h int, home, dir, conf string, env []string, args ...string) *tmuxSession {
	t.Helper()
	testenv.Tool(t, "tmux")
	out := t.TempDir()
	s := &tmuxSession{t: t, socket: fmt.Sprintf("dbxtop-e2e-%d-%d", os.Getpid(), tmuxSeq.Add(1)),
		stderrPath: filepath.Join(out, "stderr"), statusPath: filepath.Join(out, "status")}
	// env -i: the program gets exactly this environment, not the tmux
	// server's.
	cmd := append([]string{"env", "-i", "PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=xterm-256color", "LANG=C.UTF-8"}, env...)
	cmd = append(cmd, bin)
	cmd = append(cmd, args...)
	// TMUX is kept, as in a real pane: the program asks tmux about its
	// options (set-clipboard) through it.
	script := "env -i TMUX=\"$TMUX\" " + shellJoin(cmd[2:]) + " 2>" + shellJoin([]string{s.stderrPath}) + "; echo $? >" + shellJoin([]string{s.statusPath})
	if conf == "" {
		conf = "/dev/null"
	}
	s.tmux("-f", conf, "new-session", "-d", "-s", "e2e", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", dir, script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	return s
}

// shellPrompt is the prompt of the interactive shell of startTmuxShell.
const shellPrompt = "e2e-shell$"

// startTmuxShell runs an interactive bash (job control: ctrl+z, fg) in a
// new w×h session, with a clean environment plus env, and waits for its
// prompt. Commands are typed into it with typeLine.
func startTmuxShell(t *testing.T, w, h int, home string, env []string) *tmuxSession {
	t.Helper()
	testenv.Tool(t, "tmux")
	s := &tmuxSession{t: t, socket: fmt.Sprintf("dbxtop-e2e-%d-%d", os.Getpid(), tmuxSeq.Add(1))}
	cmd := append([]string{"env", "-i", "PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=xterm-256color", "LANG=C.UTF-8",
		"PS1=" + shellPrompt + " "}, env...)
	cmd = append(cmd, "bash", "--norc", "--noprofile", "-i")
	s.tmux("-f", "/dev/null", "new-session", "-d", "-s", "e2e", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", home, shellJoin(cmd))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	s.waitScreen("the shell prompt", 10*time.Second, func(scr string) bool { return strings.Contains(scr, shellPrompt) })
	return s
}

// typeLine types line into the pane's shell and presses Enter.
func (s *tmuxSession) typeLine(line string) {
	s.t.Helper()
	s.keys("-l", line)
	s.keys("Enter")
}

// jobState is the ps state (R, S, T, …) of the pane shell's one child.
func (s *tmuxSession) jobState() string {
	s.t.Helper()
	pane := strings.TrimSpace(s.tmux("display-message", "-p", "-t", "e2e", "#{pane_pid}"))
	out, err := exec.Command("ps", "-o", "stat=", "--ppid", pane).Output()
	if err != nil {
		s.t.Fatalf("ps: %v", err)
	}
	st := strings.Fields(string(out))
	if len(st) != 1 {
		s.t.Fatalf("the pane's shell has %d children (%q), want 1", len(st), out)
	}
	return st[0]
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

// waitExit waits (bounded) for the session's program to exit and returns
// its exit status and stderr.
func (s *tmuxSession) waitExit(timeout time.Duration) (int, string) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for exec.Command("tmux", "-L", s.socket, "has-session", "-t", "e2e").Run() == nil {
		if time.Now().After(deadline) {
			s.dumpStacks()
			errb, _ := os.ReadFile(s.stderrPath)
			s.t.Fatalf("still running %s after quitting; screen:\n%s\nstderr:\n%s", timeout, s.screen(), errb)
		}
		time.Sleep(100 * time.Millisecond)
	}
	errb, _ := os.ReadFile(s.stderrPath)
	st, err := os.ReadFile(s.statusPath)
	if err != nil {
		s.t.Fatalf("no exit status: %v\nstderr:\n%s", err, errb)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(st)))
	if err != nil {
		s.t.Fatalf("exit status %q: %v", st, err)
	}
	return code, string(errb)
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
// terminal: at 59×20 the TUI says what it needs instead of drawing a
// broken table, and still quits on q. (The rendering itself is golden-
// tested in tui.TestGoldenTooSmall.)
func TestTerminalTooSmall(t *testing.T) {
	t.Parallel()
	budget(t)
	home := t.TempDir()
	s := startTmux(t, 59, 20, home, home, "demo", "--scenario", "quiet", "--no-color")
	want := "terminal too small: 59×20, dbxtop needs at least 60×20"
	scr := s.waitScreen("the too-small message", 20*time.Second, func(s string) bool { return strings.Contains(s, want) })
	noStackTrace(t, "screen", scr)
	s.keys("q")
	if code, stderr := s.waitExit(10 * time.Second); code != 0 || stderr != "" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// signal sends sig to the pane's program (the child of the pane's shell).
func (s *tmuxSession) signal(sig syscall.Signal) {
	s.t.Helper()
	out, err := exec.Command("tmux", "-L", s.socket, "display-message", "-p", "-t", "e2e", "#{pane_pid}").Output()
	if err != nil {
		s.t.Fatalf("pane pid: %v", err)
	}
	kids, err := exec.Command("ps", "-o", "pid=", "--ppid", strings.TrimSpace(string(out))).Output()
	if err != nil {
		s.t.Fatalf("ps: %v", err)
	}
	n := 0
	for _, f := range strings.Fields(string(kids)) {
		if pid, err := strconv.Atoi(f); err == nil {
			if p, err := os.FindProcess(pid); err == nil && p.Signal(sig) == nil {
				n++
			}
		}
	}
	if n != 1 {
		s.t.Fatalf("signalled %d processes, want 1 (pane children: %q)", n, kids)
	}
}

// dumpStacks sends SIGQUIT to the pane's program so that its goroutines
// land in the stderr file: a hang is reported with where it hangs.
func (s *tmuxSession) dumpStacks() {
	s.signal(syscall.SIGQUIT)
	time.Sleep(500 * time.Millisecond) // let the runtime write the dump; diagnostics only
}
