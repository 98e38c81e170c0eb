package cmd

import (
	"time"

	"github.com/spf13/cobra"
)

func (a *app) newDemoCmd() *cobra.Command {
	var ws WorkspaceConfig
	var sim SimConfig
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the TUI on an embedded simulated workspace (no account, no network)",
		Long: `Start the simulated workspace in-process on loopback and run the TUI on it.
Nothing leaves the machine and no account is needed.

The simulator's timeouts are compressed (idle 90s, leak 150s) and, unless
you set them, dbxtop's thresholds follow them (inactivity-warn 15s,
server-idle-timeout 90s, leak-after 18s), so every flag kind appears
within three minutes without a key pressed (REAPED, the last, at about
1m35s). Add --faults to watch dbxtop's retries at work.`,
		Example: `  dbxtop demo
  dbxtop demo --faults reset=0.2@GetOperationStatus,throttle=0.1
  dbxtop demo --scenario load --ops 2000 --refresh 1s`,
		Args: noArgs,
		PreRunE: func(c *cobra.Command, _ []string) error {
			fs := c.Flags()
			// The workspace is the embedded simulator: a real workspace's
			// coordinates would be silently ignored, so refuse them.
			for _, name := range []string{"host", "profile", "http-path", "proxy"} {
				if fs.Changed(name) {
					return invalidFlag(name, fs.Lookup(name).Value.String(),
						"demo runs its own simulated workspace; use `dbxtop --"+name+"` for a real one")
				}
			}
			if err := finishSim(fs, &sim); err != nil {
				return err
			}
			if err := a.finishWorkspace(fs, &ws, true); err != nil {
				return err
			}
			demoThresholds(fs.Changed, &ws, sim)
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if a.runDemo == nil {
				a.code = a.notBuilt("dbxtop demo")
				return nil
			}
			a.code = a.runDemo(c.Context(), ws, sim, a.stdout, a.stderr)
			return nil
		},
	}
	fs := c.Flags()
	addWorkspaceFlags(fs, &ws, flagsDemo)
	addSimFlags(fs, &sim)
	// The demo is a strict server (addSimFlags' default): dbxtop's actions
	// must use real handles (the proxy's) or the Statement Execution API,
	// as on a real workspace.
	completeSimFlags(c)
	for _, name := range []string{"host", "profile", "http-path", "proxy", "config", "context"} {
		_ = fs.MarkHidden(name) // refused in demo; kept so the refusal can explain
	}
	for _, name := range []string{"inactivity-warn", "server-idle-timeout", "leak-after", "server-leak-timeout"} {
		f := fs.Lookup(name)
		f.DefValue = "" // in demo the default follows the simulator
		f.Usage += " (default: derived from --idle-timeout / --leak-timeout)"
	}
	return c
}

// demoThresholds derives the thresholds the operator did not set from the
// simulator's timeouts: warn at 1/6 of the idle timeout, count down to the
// idle timeout itself, and flag leaks at 1/8 of the leak timeout so that
// UNCLOSED turns critical (5×) before the simulator reaps the operation.
func demoThresholds(changed func(string) bool, ws *WorkspaceConfig, sim SimConfig) {
	idle, leak := sim.effectiveTimeouts()
	th := &ws.Thresholds
	if !changed("inactivity-warn") {
		th.InactivityWarn = max((idle / 6).Truncate(time.Second), time.Second)
	}
	if !changed("server-idle-timeout") {
		th.ServerIdleTimeout = idle
	}
	if !changed("leak-after") {
		th.LeakAfter = max((leak / 8).Truncate(time.Second), time.Second)
	}
	if !changed("server-leak-timeout") {
		th.ServerLeakTimeout = leak
	}
}
