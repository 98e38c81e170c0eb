package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// startupScreens samples the pane until done(screen), failing on any
// screen that claims "no operations" before anything was listed.
func startupScreens(t *testing.T, s *tmuxSession, what string, timeout time.Duration, done func(string) bool) string {
	t.Helper()
	return s.waitScreen(what, timeout, func(scr string) bool {
		if strings.Contains(scr, "no operations on") {
			t.Fatalf("the screen says no operations before any listing:\n%s", scr)
		}
		return done(scr)
	})
}

// quitFast presses q and checks the process is gone within a bound that
// leaves room for a noisy machine around the second it may take.
func quitFast(t *testing.T, s *tmuxSession) (int, string) {
	t.Helper()
	t0 := time.Now()
	s.keys("q")
	code, stderr := s.waitExit(10 * time.Second)
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("the process exited %s after q, want within a second (2 s allowed for a noisy machine)", d.Round(10*time.Millisecond))
	}
	return code, stderr
}

// The TUI against a dead host: until the first answer it says it waits
// for the first listing, then that the listing is being retried with the
// last attempt's cause; never "no operations", never "last error: none"
// while retries run; q exits at once.
func TestStartupWithADeadHostInTmux(t *testing.T) {
	t.Parallel()
	budget(t)
	home := t.TempDir()
	s := startTmuxEnv(t, 80, 24, home, home, "", []string{"DATABRICKS_TOKEN=dapi-e2e-dead-host"},
		"--host", fmt.Sprintf("http://127.0.0.1:%d", closedPort(t)), "--no-color")
	scr := startupScreens(t, s, "the retried listing's cause", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "the last attempt:") && strings.Contains(scr, "connection refused")
	})
	for _, l := range strings.Split(scr, "\n") {
		if strings.TrimSpace(l) == "last error: none" {
			t.Errorf("the header says no error while retrying:\n%s", scr)
		}
	}
	if code, stderr := quitFast(t, s); code != 0 || strings.Contains(stderr, "dapi-e2e") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// The TUI with a host and no credentials: the SDK's credential chain
// may hang; the screen says it is authenticating, with its deadline, and
// past --auth-timeout names what was tried and what to set. q exits at
// once, and stderr says the same.
func TestStartupWithoutCredentialsInTmux(t *testing.T) {
	t.Parallel()
	budget(t)
	home := t.TempDir()
	s := startTmuxEnv(t, 80, 24, home, home, "", nil, "--host", fmt.Sprintf("http://127.0.0.1:%d", closedPort(t)), "--auth-timeout", "3s", "--no-color")
	scr := startupScreens(t, s, "the credential failure", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "no credentials resolved") || strings.Contains(scr, "authenticating to")
	})
	if strings.Contains(scr, "authenticating to") {
		if !strings.Contains(strings.Join(strings.Fields(scr), " "), "gives up after 3s") {
			t.Errorf("the waiting screen does not say its deadline:\n%s", scr)
		}
		scr = startupScreens(t, s, "the credential failure", 20*time.Second, func(scr string) bool {
			return strings.Contains(scr, "no credentials resolved")
		})
	}
	if !strings.Contains(strings.Join(strings.Fields(scr), " "), "DATABRICKS_TOKEN") {
		t.Errorf("the failure does not say what to set:\n%s", scr)
	}
	code, stderr := quitFast(t, s)
	if code != 1 || !strings.Contains(stderr, "--auth-timeout") {
		t.Errorf("exit %d, stderr %q; want 1 and the credential failure", code, stderr)
	}
}
