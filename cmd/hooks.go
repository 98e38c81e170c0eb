package cmd

import (
	"context"
	"io"
)

// The command bodies live in other packages (tui, sources/sim, poller) and
// are wired in by assigning these variables from a file of this package,
// so that the command tree, flags and validation do not depend on them.
// Each returns the process exit status. A nil hook makes its command say
// plainly that it is not built yet and exit 1: it never pretends to work.
var (
	// runTUI runs the TUI on the configured workspace (root command).
	runTUI func(ctx context.Context, cfg WorkspaceConfig, stdout, stderr io.Writer) int
	// runDemo starts the simulator in-process on loopback and runs the TUI
	// on it; ws.Host and ws.Token are empty and filled by the hook.
	runDemo func(ctx context.Context, ws WorkspaceConfig, sim SimConfig, stdout, stderr io.Writer) int
	// runSim serves the simulated workspace until ctx is done; its first
	// line of stdout is `host=http://… token=…`.
	runSim func(ctx context.Context, sim SimConfig, stdout, stderr io.Writer) int
)
