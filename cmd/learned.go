package cmd

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/dbxtop/dbxtop/capstore"
	"github.com/dbxtop/dbxtop/poller"
)

// openLearned opens the state file of row limits learned from
// RESOURCE_EXHAUSTED (docs/capacity.md) at the path finishWorkspace
// resolved. Its problems are one line each, on stderr and in the log;
// dbxtop goes on with the limits in memory. With tui, only problems met
// while opening reach stderr (the screen belongs to the TUI afterwards:
// later ones go to the log, and the engine's event says it).
func openLearned(ws WorkspaceConfig, stderr io.Writer, logf func(string, ...any), tui bool) *capstore.Store {
	var opened atomic.Bool
	warn := func(line string) {
		if !tui || !opened.Load() {
			fmt.Fprintln(stderr, line)
		}
		logf("%s", line)
	}
	defer opened.Store(true)
	if ws.statePathErr != nil {
		warn("dbxtop: learned limits: " + ws.statePathErr.Error() + "; learned limits are kept in memory only")
		return capstore.Open("", nil)
	}
	return capstore.Open(ws.statePath, warn)
}

// learnedFor is one workspace's view of the store (nil: the engine keeps
// its own in memory).
func learnedFor(s *capstore.Store, host string) poller.LearnedLimits {
	if s == nil {
		return nil
	}
	return s.ForWorkspace(host)
}
