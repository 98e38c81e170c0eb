package cmd

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dbxtop/dbxtop/model"
)

func (a *app) newSnapshotCmd() *cobra.Command {
	var cfg SnapshotConfig
	c := &cobra.Command{
		Use:   "snapshot",
		Short: "Observe once (or --watch) and print; for scripts and alerting",
		Long: `Observe the workspace once and print every operation, endpoint and flag:
a table by default, the snapshot JSON with -o json (or --json), YAML with
-o yaml. With --watch it keeps
observing and prints one JSON line every --interval (--count times, or
until interrupted).

Exit status follows the Nagios plugin convention, so an alerting system
can run it as a check:
  0  OK        nothing flagged
  1  WARNING   at least one warning flag
  2  CRITICAL  at least one critical flag
  3  UNKNOWN   could not observe (the cause, error_code and request_id on
               stderr) or invalid arguments

With --filter the output holds only the operations the filter keeps (no
endpoints), and the exit status counts only their flags: a warning on an
operation the filter leaves out does not make it 1. The syntax is the
TUI's / (docs/operator-guide.md, Filters): free words, user:, client:,
wh:, state:, flag: (commas for alternatives), age>5m, idle>1m.`,
		Example: `  dbxtop snapshot -p prod
  dbxtop snapshot -o json --timeout 20s | jq '.operations[] | select(.flags != [])'
  dbxtop snapshot --watch --interval 30s --count 10 >> dbxtop.jsonl
  dbxtop snapshot --capacity-probe --json
  dbxtop snapshot --filter 'client:jdbc flag:UNCLOSED' -o json`,
		Args: noArgs,
		PreRunE: func(c *cobra.Command, _ []string) error {
			return a.finishSnapshotFlags(c.Flags(), &cfg)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if a.runSnapshot == nil {
				a.code = a.notBuilt("dbxtop snapshot")
				return nil
			}
			a.code = a.runSnapshot(c.Context(), cfg, a.stdout, a.stderr)
			return nil
		},
	}
	addSnapshotFlags(c.Flags(), &cfg)
	return c
}

// finishSnapshotFlags refuses flags that contradict each other (the output
// format against --json, --watch and --wide) and fills in the defaults
// that depend on other flags.
func (a *app) finishSnapshotFlags(fs *pflag.FlagSet, cfg *SnapshotConfig) error {
	if cfg.JSON {
		if fs.Changed("output") && cfg.Output != outputJSON {
			return invalidFlag("output", cfg.Output, "--json is -o json; give one of them")
		}
		cfg.Output = outputJSON
	}
	cfg.JSON = cfg.Output == outputJSON
	if cfg.Watch && fs.Changed("output") && cfg.Output != outputJSON {
		return invalidFlag("output", cfg.Output, "--watch prints JSON lines")
	}
	if !cfg.Watch {
		for _, name := range []string{"interval", "count"} {
			if fs.Changed(name) {
				return invalidFlag(name, fs.Lookup(name).Value.String(), "only valid with --watch")
			}
		}
	}
	if cfg.Wide && (cfg.JSON || cfg.Watch) {
		// --wide shapes the human table; JSON and --watch's JSON
		// lines have no columns to keep.
		other := "--json"
		if !cfg.JSON {
			other = "--watch"
		}
		return usagef("invalid --wide: only for the table; %s prints JSON", other)
	}
	if err := model.ParseFilter(cfg.Filter); err != nil {
		return invalidFlag("filter", cfg.Filter, strings.TrimPrefix(err.Error(), "filter: "))
	}
	if err := a.finishWorkspace(fs, &cfg.WorkspaceConfig, false); err != nil {
		return err
	}
	if cfg.Watch && !fs.Changed("interval") {
		cfg.Interval = cfg.Refresh
	}
	return nil
}

func addSnapshotFlags(fs *pflag.FlagSet, cfg *SnapshotConfig) {
	addWorkspaceFlags(fs, &cfg.WorkspaceConfig, flagsSnapshot)
	addOutputFlag(fs, &cfg.Output, "the snapshot (json and yaml: schema dbxtop.snapshot/v1)")
	fs.BoolVar(&cfg.JSON, "json", false, "the same as -o json")
	fs.BoolVar(&cfg.Wide, "wide", false, "human table: every column, none cut (default: fit the terminal, or 100 columns)")
	fs.BoolVar(&cfg.Watch, "watch", false, "keep observing; print one JSON line per --interval")
	iv := newDuration(&cfg.Interval, 0, model.MinRefresh)
	iv.zeroOK = false
	fs.Var(iv, "interval", "with --watch: time between lines (default: --refresh)")
	fs.Lookup("interval").DefValue = "" // the usage names the default; pflag would add "0s"
	fs.Var(newInt(&cfg.Count, 0, 1, 1<<31-1), "count", "with --watch: stop after N lines (default: until interrupted)")
	addCapacityProbeFlag(fs, &cfg.CapacityProbe)
	fs.Var(newDuration(&cfg.Timeout, 30*time.Second, model.MinRefresh), "timeout", "give up observing after this long (exit 3, with the cause)")
	fs.StringVar(&cfg.Filter, "filter", "", "keep only the operations this filter matches, as the TUI's / does (user:, client:, wh:, state:, flag:, age>5m, idle>1m, free words); the exit status counts only them")
}

// addCapacityProbeFlag is --capacity-probe, the same opt-in write for
// snapshot and serve (docs/capacity.md says what it costs).
func addCapacityProbeFlag(fs *pflag.FlagSet, p *bool) {
	fs.BoolVar(p, "capacity-probe", false,
		"send one empty upsert per vector endpoint so a full one answers RESOURCE_EXHAUSTED at once (opt-in: it writes)")
}
