package tui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
)

// TestE2EDemoInTmux builds the real binary, runs `dbxtop demo` in a tmux
// session of 120×40 on a private tmux socket, and reads the screen the way
// an operator would. It skips only without tmux (.ci/run installs it); a
// binary that does not build fails it.
func TestE2EDemoInTmux(t *testing.T) {
	testenv.Tool(t, "tmux")
	dir := t.TempDir()
	bin := filepath.Join(dir, "dbxtop")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/dbxtop/dbxtop")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("e2e: go build failed: %v\n%s", err, out)
	}

	sock := fmt.Sprintf("dbxtop-e2e-%d", os.Getpid())
	tmux := func(args ...string) (string, error) {
		// -f /dev/null: the caller's tmux configuration must not matter.
		out, err := exec.CommandContext(ctx, "tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	// NO_COLOR keeps the capture free of escape codes; TERM is fixed so
	// the run does not depend on the caller's terminal.
	if out, err := tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40",
		"env", "TERM=xterm-256color", "NO_COLOR=1", bin, "demo"); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })

	screen := func() string {
		out, _ := tmux("capture-pane", "-p", "-t", "e2e")
		return out
	}
	// waitScreen polls the pane (bounded) until cond holds.
	waitScreen := func(what string, limit time.Duration, cond func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(limit)
		for {
			s := screen()
			if cond(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("e2e: %s did not show within %s; screen:\n%s", what, limit, s)
			}
			time.Sleep(250 * time.Millisecond) // polling an external process: no event to await
		}
	}

	s := waitScreen("a flagged operation", 150*time.Second, func(s string) bool {
		return strings.Contains(s, "STATEMENT") && (strings.Contains(s, " CRIT ") || strings.Contains(s, " WARN "))
	})
	if !strings.Contains(s, "[Operations]") {
		t.Fatalf("Operations is not the default view:\n%s", s)
	}

	if out, err := tmux("send-keys", "-t", "e2e", "Tab"); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	waitScreen("the Endpoints view", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "[Endpoints]") && strings.Contains(s, "ENDPOINT")
	})

	_, _ = tmux("send-keys", "-t", "e2e", "?")
	waitScreen("the Help view", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "[Help]") && strings.Contains(s, "CLOSE_FAILED") && strings.Contains(s, "cancel statement")
	})

	_, _ = tmux("send-keys", "-t", "e2e", "q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The session ends when dbxtop exits.
		if _, err := tmux("has-session", "-t", "e2e"); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dbxtop did not exit on q; screen:\n%s", screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
