// Package testenv is the one place tests decide what to do when they need
// a program outside Go (tmux, prometheus, promtool, alertmanager, node...).
// On a machine with Go alone the test skips with one line naming the
// program; under CI=true (.ci/run sets it and installs them) a missing
// program fails the test, so CI can never pass by skipping.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the run is CI's: a missing tool is then a failure.
func CI() bool { return os.Getenv("CI") == "true" }

// Tool returns the path of the program name. When it is not on PATH the
// test skips (one line naming it and why), or fails when CI is true.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if CI() {
		t.Fatalf("%s not found on PATH and CI=true requires it: .ci/run installs it", name)
	}
	t.Skipf("skipped: needs %s, not found on PATH (.ci/run installs it; CI=true makes this a failure)", name)
	return ""
}

// Missing skips the test, or fails it under CI=true, because something
// outside Go that it needs is missing or too old: what says which, and
// install how .ci/run (or the reader) gets it.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	if CI() {
		t.Fatalf("%s, and CI=true requires it: %s", what, install)
	}
	t.Skipf("skipped: %s (%s; CI=true makes this a failure)", what, install)
}

// Long skips the test under `go test -short`: what takes real time (a
// demo timeline, a real server's reaper) is left for the full run.
func Long(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("skipped with -short: %s", why)
	}
}
