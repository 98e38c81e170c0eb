package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// demoFlagDeadlines is what README promises of `dbxtop demo`: every
// operation flag kind within 3 minutes of the start, and one vector
// endpoint filled to EXHAUSTED within 90 s.
var demoFlagDeadlines = []struct {
	kind model.FlagKind
	by   time.Duration
}{
	{model.FlagInactive, 3 * time.Minute},
	{model.FlagStale, 3 * time.Minute},
	{model.FlagUnclosed, 3 * time.Minute},
	{model.FlagCloseFailed, 3 * time.Minute},
	{model.FlagReaped, 3 * time.Minute},
	{model.FlagExhausted, 90 * time.Second},
}

// TestDemoShowsEveryFlagUnattended runs `dbxtop demo` as an operator
// starts it (the real binary, default flags, nothing pressed) in a real
// terminal and watches the header's flag counts until every kind has
// shown. The demo runs in real time: its timeline is the simulator's
// clock, and dbxtop's refresh, poll schedule, retry policy and scripted
// operator are not scaled by the simulator's test speed-up, so only a
// real-time run proves the figure an operator sees. Each kind's time is
// measured from before the program starts (an upper bound on the demo's
// own clock) and the test ends as soon as the last kind shows (≈100 s).
// The pane is sampled, not slept on: flags stay up for at least 10 s
// (STALE, the shortest) and the screen is redrawn every refresh.
func TestDemoShowsEveryFlagUnattended(t *testing.T) {
	t.Parallel()
	budget(t)
	home := t.TempDir()
	start := time.Now()
	s := startTmux(t, 240, 40, home, home, "demo", "--no-color")
	counts := map[model.FlagKind]*regexp.Regexp{}
	for _, d := range demoFlagDeadlines {
		counts[d.kind] = regexp.MustCompile(`[●▲] ` + string(d.kind) + ` \d`)
	}
	first := map[model.FlagKind]time.Duration{}
	last := 0 * time.Second
	for _, d := range demoFlagDeadlines {
		last = max(last, d.by)
	}
	var scr string
	for len(first) < len(demoFlagDeadlines) && time.Since(start) <= last {
		scr = s.screen()
		at := time.Since(start)
		for _, line := range strings.Split(scr, "\n") {
			if !strings.HasPrefix(line, "flags") {
				continue // the header's flag counts line
			}
			for k, re := range counts {
				if _, seen := first[k]; !seen && re.MatchString(line) {
					first[k] = at
					t.Logf("%s first shown at %s", k, at.Round(time.Second))
				}
			}
		}
		time.Sleep(250 * time.Millisecond) // sampling a screen: no event to wait on
	}
	for _, d := range demoFlagDeadlines {
		at, seen := first[d.kind]
		switch {
		case !seen:
			t.Errorf("%s never shown within %s", d.kind, d.by)
		case at > d.by:
			t.Errorf("%s shown at %s, want within %s", d.kind, at.Round(time.Second), d.by)
		}
	}
	if t.Failed() {
		t.Logf("last screen:\n%s", scr)
	}
	s.keys("q")
	if code, stderr := s.waitExit(15 * time.Second); code != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
