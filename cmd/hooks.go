package cmd

import (
	"context"
	"io"
)

// The command bodies are fields of app: the functions that do the work
// once the command line is parsed and checked. newApp gives them the real
// implementations (wire.go, snapshot_run.go, proxy.go); tests build an app
// with their own, so that the command tree, flags and validation are
// tested without a workspace, a simulator or a terminal. Each returns the
// process exit status. A nil body makes its command say plainly that it is
// not built and exit 1: it never pretends to work.
type (
	// tuiBody runs the TUI on the configured workspace (root command).
	tuiBody func(ctx context.Context, cfg WorkspaceConfig, stdout, stderr io.Writer) int
	// demoBody starts the simulator in-process on loopback and runs the
	// TUI on it; ws.Host and ws.Token are empty and filled by the body.
	demoBody func(ctx context.Context, ws WorkspaceConfig, sim SimConfig, stdout, stderr io.Writer) int
	// simBody serves the simulated workspace until ctx is done; its first
	// line of stdout is `host=http://… token=…`.
	simBody func(ctx context.Context, sim SimConfig, stdout, stderr io.Writer) int
	// snapshotBody observes the workspace and prints (snapshot_run.go).
	snapshotBody func(ctx context.Context, cfg SnapshotConfig, stdout, stderr io.Writer) int
	// proxyBody serves the Thrift proxy until ctx is done (proxy.go).
	proxyBody func(ctx context.Context, cfg ProxyConfig, stdout, stderr io.Writer) int
)
