package sim

import (
	"time"
)

// Options configures a simulated workspace. The zero value is a demo
// workspace on a random loopback port.
type Options struct {
	Listen     string // "127.0.0.1:0" when empty
	Token      string // "" → 32 random hex characters (crypto/rand)
	Seed       int64
	Faults     string // PRODUCT.md §7 grammar; parsed by ParseFaults
	Scenario   string // "demo" (default) | "quiet" | "load" | "vector-incident"
	Warehouses int    // default 3
	// IdleTimeout reaps a non-terminal operation whose owner has shown no
	// activity for this long (demo default 90s, else 430s).
	IdleTimeout time.Duration
	// LeakTimeout closes a terminal operation nobody closed (demo default
	// 150s, else 23m).
	LeakTimeout time.Duration
	Ops         int // scenario load: number of long-running healthy operations
	Logf        func(string, ...any)

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

	// CheckHandleSecrets refuses operation handles whose secret does not
	// match (INVALID_HANDLE), as a strict server may; handles rebuilt from
	// statement ids then fail (`dbxtop sim --check-handle-secrets`).
	CheckHandleSecrets bool
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
	if o.Retention <= 0 {
		o.Retention = 10 * time.Minute
		if demo {
			o.Retention = 5 * time.Minute
		}
	}
	if o.ReapEvery <= 0 {
		o.ReapEvery = time.Second
	}
	if o.Clock == nil {
		o.Clock = WallClock{}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Demo thresholds: the dbxtop flags under which every flag of PRODUCT.md §4
// shows within two minutes of the demo (see docs/simulator.md).
const (
	DemoInactivityWarn    = 15 * time.Second // --inactivity-warn
	DemoServerIdleTimeout = 90 * time.Second // --server-idle-timeout (= the demo's IdleTimeout)
	DemoLeakAfter         = 20 * time.Second // --leak-after
)
