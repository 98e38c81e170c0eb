package cmd

import (
	"log/slog"
	"time"

	"github.com/dbxtop/dbxtop/capstore"
	"github.com/dbxtop/dbxtop/config"
	"github.com/dbxtop/dbxtop/model"
)

// WorkspaceConfig is what every command but `sim` parses from its flags
// (docs/configuration.md). Validation happens before anything starts.
type WorkspaceConfig struct {
	Profile    string
	Host       string
	Token      string // never printed, logged or exported
	Warehouses []string
	HTTPPath   string
	Refresh    time.Duration
	Thresholds model.Thresholds
	ReadOnly   bool
	NoColor    bool
	ASCII      bool
	Mouse      bool // TUI mouse reporting (--mouse)
	LogFile    string
	// AuthTimeout bounds resolving the workspace's credentials
	// (--auth-timeout): past it dbxtop says which credentials it looked
	// for and what to set, instead of waiting on the SDK's chain.
	AuthTimeout time.Duration
	// Proxies are the `dbxtop proxy`s to read: admin URLs or discovery
	// specs (--proxy, repeatable; proxy and proxies in the config file);
	// ProxyToken is their admin token, from DBXTOP_PROXY_TOKEN (never a
	// flag, never printed), unless a discovered target names a token file.
	Proxies    []string
	ProxyToken string
	// DNSServer (the hidden --dns-server) is the only DNS server the
	// dns+ proxy specs ask: tests serve names from loopback.
	DNSServer string
	// CapacityProbe: one empty upsert per vector endpoint per refresh
	// (--capacity-probe; snapshot and serve).
	CapacityProbe bool
	// serviceLogger, when set (serve), is the engines' logger.
	serviceLogger *slog.Logger
	// simStrictHandles: demo's simulator checks handle secrets, so
	// dbxtop's actions must not use rebuilt Thrift handles.
	simStrictHandles bool

	// The config file and contexts (docs/configuration.md).
	ConfigPath string   // --config; "" → the default location
	Contexts   []string // --context, repeatable; "all" → every context
	ExportDir  string   // --export-dir (or export_dir in the file)
	Window     time.Duration
	RowLimits  map[string]int64 // the file's per-endpoint row limits
	// Learned keeps the row limits learned from RESOURCE_EXHAUSTED (the
	// state file); nil keeps them in each engine's memory (demo).
	Learned      *capstore.Store
	statePath    string // the state file (capstore.DefaultPath), set by finishWorkspace
	statePathErr error
	// Resolved are the effective settings of each selected context (one
	// entry without contexts); the flat fields above hold the first's.
	Resolved   []config.Settings
	configFile *config.File
}

// SnapshotConfig is `dbxtop snapshot`'s configuration.
type SnapshotConfig struct {
	WorkspaceConfig
	Output   string // table, json or yaml (-o; --json is -o json)
	JSON     bool   // --json, kept as an alias of -o json
	Watch    bool
	Interval time.Duration
	Count    int // 0: until interrupted
	Timeout  time.Duration
	Wide     bool // human table: every column, never fitted to the width
	// Filter keeps only the operations it matches (model.FilterSpec.Text,
	// the TUI's / syntax); the output and the exit status count only them.
	Filter string
}

// SimConfig is `dbxtop sim`'s configuration (and demo's simulator part).
type SimConfig struct {
	Listen      string
	Token       string // "" → random
	Seed        int64
	Faults      string
	Scenario    string // demo | quiet | load
	Warehouses  int
	IdleTimeout time.Duration
	LeakTimeout time.Duration
	Ops         int           // scenario load
	Latency     time.Duration // every answer ± 20 %
	HistoryLag  time.Duration // query history trails the engine
	LoadRun     time.Duration // scenario load: statement run time (0 = 24h)
	// CheckHandleSecrets: refuse handles with a wrong secret (default on);
	// LenientHandles (--lenient-handles) turns it off. OwnerActivity:
	// volunteer the owner's activity (the dbxtop extension; off by default).
	// StatementAPIForThrift: the Statement Execution API answers
	// Thrift-run statements (unverified; off by default).
	CheckHandleSecrets    bool
	LenientHandles        bool
	StatementAPIForThrift bool
	OwnerActivity         bool
	// NoProxy: no embedded proxy in scenario demo (--proxy=false).
	NoProxy bool
}
