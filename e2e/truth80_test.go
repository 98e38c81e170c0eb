package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestNoWorkspaceFailsFast: plain `dbxtop` in a real 80×24 terminal with
// no host and no credentials exits 2 at once with one line that names
// what is missing and suggests the demo, instead of taking the terminal
// over with a screen that cannot clear; `snapshot` says the same line and
// exits 3 (UNKNOWN).
func TestNoWorkspaceFailsFast(t *testing.T) {
	t.Parallel()
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
