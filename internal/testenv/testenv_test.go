package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The helper's two outcomes, seen from outside: this test binary runs
// itself with a PATH that holds no such program, once as a developer's
// machine (CI unset: one skip line) and once as CI (CI=true: a failure).
func TestToolSkipsOrFailsWithoutTheProgram(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Tool(t, "dbxtop-no-such-tool")
		t.Log("REACHED: the test went on without its tool")
		return
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"", false, "skipped: needs dbxtop-no-such-tool, not found on PATH"},
		{"false", false, "skipped: needs dbxtop-no-such-tool"},
		{"true", true, "dbxtop-no-such-tool not found on PATH and CI=true requires it"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestToolSkipsOrFailsWithoutTheProgram$", "-test.v")
		cmd.Env = []string{"TESTENV_CHILD=1", "PATH=" + t.TempDir(), "CI=" + tc.ci}
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v:\n%s", tc.ci, failed, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, tc.want, out)
		}
		if strings.Contains(string(out), "REACHED") {
			t.Errorf("CI=%q: the test ran on without its tool:\n%s", tc.ci, out)
		}
	}
}

func TestToolFindsAProgramOnPath(t *testing.T) {
	if p := Tool(t, "go"); p == "" {
		t.Fatal("go is on PATH (it runs this test) but Tool returned no path")
	}
}

// Missing, seen from outside like Tool: one skip line on a developer's
// machine, a failure under CI=true, and the test never goes on.
func TestMissingSkipsOrFails(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Missing(t, "the widget is missing", "apt-get install widget")
		t.Log("REACHED: the test went on without its widget")
		return
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"", false, "skipped: the widget is missing (apt-get install widget; CI=true makes this a failure)"},
		{"true", true, "the widget is missing, and CI=true requires it: apt-get install widget"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingSkipsOrFails$", "-test.v")
		cmd.Env = []string{"TESTENV_CHILD=1", "CI=" + tc.ci}
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v:\n%s", tc.ci, failed, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "REACHED") {
			t.Errorf("CI=%q: want %q and no REACHED:\n%s", tc.ci, tc.want, out)
		}
	}
}
