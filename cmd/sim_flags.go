package cmd

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Scenario names (docs/simulator.md, Scenarios).
var scenarios = []string{"demo", "quiet", "load", "vector-incident"}

// addSimFlags registers the simulator flags shared by `sim` and `demo`.
// Zero durations and counts mean "the simulator's default for the
// scenario", so that one place (sources/sim) owns those figures.
func addSimFlags(fs *pflag.FlagSet, cfg *SimConfig) {
	cfg.Listen, cfg.Scenario, cfg.Seed = "127.0.0.1:0", "demo", 1
	fs.Var(&checkedString{p: &cfg.Listen, typ: "addr", check: checkListen}, "listen",
		"address to serve on; port 0 picks a free one (the first line of stdout says which)")
	fs.Var(&checkedString{p: &cfg.Token, typ: "token", check: nonEmpty("the token"), hide: true}, "token",
		"bearer token clients must send (default: random, printed on the first line)")
	fs.Var(&int64Value{p: &cfg.Seed}, "seed", "seed of the workload and fault injection: same seed, same run")
	fs.Var(&checkedString{p: &cfg.Faults, typ: "spec", check: checkFaults}, "faults",
		"comma list of kind=value[@call]: reset=P, stale=P, throttle=P, throttle-bare=P, unavailable=P,\n"+
			"gateway=P, quota=P (P a probability 0..1), exhausted=ENDPOINT, latency=DURATION;\n"+
			"@call limits a fault to one RPC or SDK method, e.g. reset=0.2@GetOperationStatus")
	fs.Var(&checkedString{p: &cfg.Scenario, typ: "name", check: oneOf(scenarios...)}, "scenario",
		"workload: demo (every kind of trouble), quiet (no workload), load (--ops healthy long-running operations),\n"+
			"vector-incident (seven Direct Access indexes on one STANDARD endpoint filled to its limit by batches of 5)")
	fs.Var(newInt(&cfg.Warehouses, 0, 1, 100), "warehouses", "number of simulated SQL warehouses (default 3)")
	idle := newDuration(&cfg.IdleTimeout, 0, time.Second)
	idle.zeroOK = true
	fs.Var(idle, "idle-timeout", "reap a running operation whose client is idle this long (default 90s in scenario demo, else 430s)")
	leak := newDuration(&cfg.LeakTimeout, 0, time.Second)
	leak.zeroOK = true
	fs.Var(leak, "leak-timeout", "reap a finished operation nobody closed after this long (default 150s in scenario demo, else 23m)")
	fs.Var(newInt(&cfg.Ops, 0, 1, 100_000), "ops", "scenario load: number of long-running healthy operations (default 100)")
	lat := newDuration(&cfg.Latency, 0, 0)
	lat.zeroOK = true
	fs.Var(lat, "latency", "delay every Thrift and REST answer by this much ± 20 % (a remote workspace's round trip, e.g. 50ms)")
	lag := newDuration(&cfg.HistoryLag, 0, 0)
	lag.zeroOK = true
	fs.Var(lag, "history-lag", "query history trails the execution engine by this much (statements appear late, end late)")
	run := newDuration(&cfg.LoadRun, 0, time.Second)
	run.zeroOK = true
	fs.Var(run, "load-run", "scenario load: each statement runs this long, then its client replaces it (default 24h)")
	// Strict by default: the evidence (docs/simulator.md) is of servers
	// that check the secret; the lenient lookup is opt-in.
	cfg.CheckHandleSecrets = true
	fs.BoolVar(&cfg.CheckHandleSecrets, "check-handle-secrets", true,
		"refuse operation handles whose secret does not match, as HiveServer2 does (handles rebuilt from statement ids fail)")
	fs.BoolVar(&cfg.LenientHandles, "lenient-handles", false,
		"look operation handles up by GUID alone, the same as --check-handle-secrets=false:\n"+
			"no evidence shows a real server doing this (docs/simulator.md)")
	fs.BoolVar(&cfg.StatementAPIForThrift, "statement-api-for-thrift", false,
		"let the Statement Execution API (GET/cancel/DELETE /api/2.0/sql/statements/{id}) answer statements run over Thrift:\n"+
			"no evidence shows a real server doing this (docs/simulator.md)")
	fs.BoolVar(&cfg.OwnerActivity, "owner-activity", false,
		"volunteer the owning client's last activity in GetOperationStatus (dbxtop's Thrift extension; no real server does)")
	fs.Var(&negBool{p: &cfg.NoProxy}, "embedded-proxy",
		"scenario demo: send part of the workload through an embedded dbxtop proxy (INACTIVE and client CLOSE_FAILED as in a real deployment)")
}

// negBool is a flag that is true by default and stores its negation.
type negBool struct{ p *bool }

func (v *negBool) String() string {
	if v.p != nil && *v.p {
		return "false"
	}
	return "true"
}
func (v *negBool) Type() string     { return "bool" }
func (v *negBool) IsBoolFlag() bool { return true }
func (v *negBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v.p = !b
	return nil
}

// Effective simulator timeouts when the flags are left at zero; they
// mirror sources/sim's defaults and drive demo's thresholds.
func (c SimConfig) effectiveTimeouts() (idle, leak time.Duration) {
	idle, leak = c.IdleTimeout, c.LeakTimeout
	demo := c.Scenario == "demo"
	if idle <= 0 {
		idle = 430 * time.Second
		if demo {
			idle = 90 * time.Second
		}
	}
	if leak <= 0 {
		leak = 23 * time.Minute
		if demo {
			leak = 150 * time.Second
		}
	}
	return idle, leak
}

// finishSim applies the cross-flag rules of the simulator flags.
func finishSim(fs *pflag.FlagSet, cfg *SimConfig) error {
	if fs.Changed("lenient-handles") && fs.Changed("check-handle-secrets") {
		return usagef("--lenient-handles is --check-handle-secrets=false: give one of them")
	}
	if cfg.LenientHandles {
		cfg.CheckHandleSecrets = false
	}
	if fs.Changed("load-run") && cfg.Scenario != "load" {
		return invalidFlag("load-run", cfg.LoadRun.String(), "only valid with --scenario load")
	}
	if fs.Changed("ops") && cfg.Scenario != "load" {
		return invalidFlag("ops", fmt.Sprint(cfg.Ops), "only valid with --scenario load")
	}
	return nil
}

// completeSimFlags offers the scenario names to shell completion.
func completeSimFlags(c *cobra.Command) {
	_ = c.RegisterFlagCompletionFunc("scenario", cobra.FixedCompletions(scenarios, cobra.ShellCompDirectiveNoFileComp))
}
