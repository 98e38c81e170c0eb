package sim

import (
	"log/slog"
	"time"
)

// Options configures a simulated workspace. The zero value is a demo
// workspace on a random loopback port.
type Options struct {
	Listen     string // "127.0.0.1:0" when empty
	Token      string // "" → 32 random hex characters (crypto/rand)
	Seed       int64
	Faults     string // docs/simulator.md grammar; parsed by ParseFaults
	Scenario   string // "demo" (default) | "quiet" | "load" | "vector-incident"
	Warehouses int    // default 3
	// IdleTimeout reaps a non-terminal operation whose owner has shown no
	// activity for this long (demo default 90s, else 430s).
	IdleTimeout time.Duration
	// LeakTimeout closes a terminal operation nobody closed (demo default
	// 150s, else 23m).
	LeakTimeout time.Duration
	Ops         int // scenario load: number of long-running healthy operations
	// StoppedWarehouses adds this many spare warehouses, STOPPED, that the
	// workload never uses (demo default 1, so the demo shows a stopped
	// warehouse; negative: none). A Thrift request to one starts it.
	StoppedWarehouses int
	// AutoStop stops a running warehouse after this long without a client
	// request or a live operation (default 10m, divided by Speed in the
	// demo; negative: never).
	AutoStop time.Duration
	// StartDelay is how long a started warehouse stays STARTING (default
	// 5s, divided by Speed in the demo).
	StartDelay time.Duration
	// Logger receives what the simulator reports of itself (serving,
	// warehouses started and stopped) at info, and its scripted clients'
	// failures at debug; nil discards it.
	Logger *slog.Logger

	// Clock drives every server-side timestamp, the state machine and the
	// reaper; nil is the wall clock. Tests inject a ManualClock.
	Clock Clock
	// ReapEvery is the reaper's tick (default 1s).
	ReapEvery time.Duration
	// Speed compresses the demo workload's timeline (durations are divided
	// by it, and so are the demo's default timeouts); 0 means 1. Tests use
	// it to see the whole cast in seconds.
	Speed float64
	// Retention is how long a closed operation stays in truth and query
	// history (default 10m; 5m in the demo).
	Retention time.Duration

	// Latency delays every answer of the workspace APIs (Thrift and REST,
	// not /sim/v1) by this much ± 20 %, uniformly: the round trip of a
	// real workspace seen from afar (50 ms from a bastion). Unlike the
	// latency fault it is not counted as a fault. 0 = loopback speed.
	Latency time.Duration
	// HistoryLag is how far query history trails the execution engine: a
	// statement is listed once it is this old, with the status it had this
	// long ago (docs/simulator.md). 0 (the default) = no lag.
	HistoryLag time.Duration
	// LoadRun is how long a load-scenario statement runs before its client
	// fetches, closes it and starts the next (default 24h: no churn). With
	// Ops=10000 and LoadRun=20s, 5 % of the operations are replaced per
	// second.
	LoadRun time.Duration
	// LoadPoll is how often a load-scenario client polls its own statement
	// (default 20s).
	LoadPoll time.Duration
	// LenientHandles looks operation handles up by GUID alone, so handles
	// rebuilt from statement ids work (`dbxtop sim --lenient-handles`).
	// No evidence shows a real server doing this (docs/simulator.md); the
	// zero value is strict: a handle whose secret does not match is
	// unknown (INVALID_HANDLE), as HiveServer2 answers.
	LenientHandles bool
	// StatementAPIForThrift makes the Statement Execution API (GET
	// /api/2.0/sql/statements/{id}, cancel, DELETE) answer statements run
	// over Thrift (`dbxtop sim --statement-api-for-thrift`). No evidence
	// shows a real server doing this (docs/simulator.md); by default the
	// API knows only statements run through it, and the simulator runs
	// none that way, so it answers 404 RESOURCE_DOES_NOT_EXIST.
	StatementAPIForThrift bool
	// OwnerActivity volunteers the owning client's last activity and the
	// operation's openness in GetOperationStatus (the dbxtop extension of
	// docs/thrift.md). Off by default: a real server sends neither
	// (`dbxtop sim --owner-activity`).
	OwnerActivity bool
	// Proxy, when set, is called once the server listens, with its URL; it
	// returns the URL the demo's proxied clients connect through (cmd
	// starts `dbxtop proxy` there: this package never imports it).
	Proxy func(upstream string) (clientURL string, err error)
}

const (
	ScenarioDemo  = "demo"
	ScenarioQuiet = "quiet"
	ScenarioLoad  = "load"
	// ScenarioVectorIncident plays the Vector Search incident: seven
	// Direct Access indexes on one STANDARD endpoint filled to its real
	// limit by batches of 5 (docs/simulator.md).
	ScenarioVectorIncident = "vector-incident"
)

func (o Options) withDefaults() Options {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.Scenario == "" {
		o.Scenario = ScenarioDemo
	}
	if o.Warehouses <= 0 {
		o.Warehouses = 3
	}
	if o.Speed <= 0 {
		o.Speed = 1
	}
	demo := o.Scenario == ScenarioDemo
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 430 * time.Second
		if demo {
			o.IdleTimeout = time.Duration(float64(90*time.Second) / o.Speed)
		}
	}
	if o.LeakTimeout <= 0 {
		o.LeakTimeout = 23 * time.Minute
		if demo {
			o.LeakTimeout = time.Duration(float64(150*time.Second) / o.Speed)
		}
	}
	if o.StoppedWarehouses == 0 && demo {
		o.StoppedWarehouses = 1
	}
	if o.AutoStop == 0 {
		o.AutoStop = time.Duration(float64(10*time.Minute) / o.Speed)
	}
	if o.StartDelay <= 0 {
		o.StartDelay = time.Duration(float64(5*time.Second) / o.Speed)
	}
	if o.Retention <= 0 {
		o.Retention = 10 * time.Minute
		if demo {
			o.Retention = 5 * time.Minute
		}
	}
	if o.LoadRun <= 0 {
		o.LoadRun = 24 * time.Hour
	}
	if o.LoadPoll <= 0 {
		o.LoadPoll = 20 * time.Second
	}
	if o.ReapEvery <= 0 {
		o.ReapEvery = time.Second
	}
	if o.Clock == nil {
		o.Clock = WallClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Demo thresholds: the dbxtop flags under which every flag of docs/model.md
// shows within two minutes of the demo (see docs/simulator.md).
const (
	DemoInactivityWarn    = 15 * time.Second // --inactivity-warn
	DemoServerIdleTimeout = 90 * time.Second // --server-idle-timeout (= the demo's IdleTimeout)
	DemoLeakAfter         = 20 * time.Second // --leak-after
)
