package cmd

import (
	"context"
	"fmt"
	"io"
)

// runSnapshot observes the workspace and prints; it returns the Nagios
// exit code. (Stub until the REST source lands; owned by the REST/snapshot work.)
func runSnapshot(ctx context.Context, cfg SnapshotConfig, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dbxtop snapshot: not built yet")
	return 3
}
