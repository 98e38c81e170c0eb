// Package cmd is dbxtop's command line: the cobra command tree, its flags
// and their validation. Everything is parsed and checked before anything
// starts; the command bodies are fields of app (hooks.go), so that the
// command tree is tested without running them.
//
// It is the one package that may import every other; nothing imports it
// but main.
package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dbxtop/dbxtop/textfmt"
)

// app carries what every command needs: the output streams, the
// environment and the command bodies (all injectable for tests), and the
// exit status the command chose.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) (string, bool)
	code           int

	runTUI      tuiBody
	runDemo     demoBody
	runSim      simBody
	runSnapshot snapshotBody
	runProxy    proxyBody
}

// newApp is an app with the real command bodies.
func newApp(stdout, stderr io.Writer, getenv func(string) (string, bool)) *app {
	return &app{stdout: stdout, stderr: stderr, getenv: getenv,
		runTUI: monitor, runDemo: demo, runSim: serveSim, runSnapshot: snapshot, runProxy: serveProxy}
}

// Execute runs dbxtop with args (without the program name) and returns
// the process exit status.
func Execute(args []string, stdout, stderr io.Writer) int {
	return ExecuteContext(context.Background(), args, stdout, stderr)
}

// ExecuteContext is Execute with a context that ends the command (main
// cancels it on SIGINT/SIGTERM).
func ExecuteContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Error lines quote server text (messages, error bodies): stderr is
	// sanitised as a whole so no path can forget it.
	return newApp(stdout, textfmt.NewWriter(stderr), os.LookupEnv).run(ctx, args)
}

func (a *app) run(ctx context.Context, args []string) int {
	root := a.newRootCmd()
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return a.code
	}
	// Command bodies report failures through a.code, so every error that
	// reaches here is a bad command line.
	fmt.Fprintf(a.stderr, "dbxtop: %s\n", err)
	if c != nil && c.Name() == "snapshot" {
		return exitSnapshotUsage
	}
	return exitUsage
}

func (a *app) newRootCmd() *cobra.Command {
	var cfg WorkspaceConfig
	root := &cobra.Command{
		Use:   "dbxtop",
		Short: "Live operations on Databricks SQL warehouses and Vector Search capacity",
		Long: `dbxtop is top for Databricks SQL warehouses and Vector Search endpoints.

It follows every live statement, retrying its own status polls on fresh
connections so that it never abandons one, and flags what goes wrong:
clients that stopped polling (INACTIVE, with the countdown to the server's
inactivity reaper), operations dbxtop itself cannot reach (STALE),
finished operations nobody closed (UNCLOSED, CLOSE_FAILED), operations the
server reaped (REAPED), and vector endpoints near or at capacity
(CAPACITY, EXHAUSTED).

Authentication is Databricks unified auth: --host/--token/--profile, then
DATABRICKS_HOST, DATABRICKS_TOKEN, DATABRICKS_CONFIG_PROFILE, then
~/.databrickscfg, then OAuth and cloud credentials.

Try it without an account:  dbxtop demo`,
		Example: `  DATABRICKS_TOKEN=dapi… dbxtop --host https://adb-123.4.azuredatabricks.net -w abc123
  dbxtop -p prod --inactivity-warn 30s --read-only
  dbxtop demo
  dbxtop snapshot --json`,
		Args:          noArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       strings.TrimPrefix(versionLine(), "dbxtop "),
		PreRunE: func(c *cobra.Command, _ []string) error {
			return a.finishWorkspace(c.Flags(), &cfg, false)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if a.runTUI == nil {
				a.code = a.notBuilt("dbxtop")
				return nil
			}
			a.code = a.runTUI(c.Context(), cfg, a.stdout, a.stderr)
			return nil
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetVersionTemplate("dbxtop {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.DisableSuggestions = true
	root.CompletionOptions.HiddenDefaultCmd = false
	addWorkspaceFlags(root.Flags(), &cfg, flagsTUI)
	root.AddCommand(a.newDemoCmd(), a.newSimCmd(), a.newSnapshotCmd(), a.newVersionCmd(), a.newProxyCmd())
	root.AddCommand(a.newServeCmd(), a.newConfigCmd(), a.newAttachCmd())
	// cobra's completion command prints its help and exits 0 for an
	// unknown shell; make that a one-line usage error like every other.
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil && comp != root {
		comp.Args = cobra.ArbitraryArgs
		comp.RunE = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown shell %q for %q: bash, zsh, fish or powershell", args[0], c.CommandPath())
			}
			return c.Help()
		}
	}
	return root
}

// notBuilt reports an unwired command body and returns exit status 1.
func (a *app) notBuilt(name string) int {
	fmt.Fprintf(a.stderr, "%s: not built yet\n", name)
	return exitError
}
