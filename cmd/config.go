package cmd

import (
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// WorkspaceConfig is what every command but `sim` parses from its flags
// (PRODUCT.md §3). Validation happens before anything starts.
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
	LogFile    string
	// Proxy is a `dbxtop proxy` admin URL (--proxy); ProxyToken its admin
	// token, from DBXTOP_PROXY_TOKEN (never a flag, never printed).
	Proxy      string
	ProxyToken string
}

// SnapshotConfig is `dbxtop snapshot`'s configuration.
type SnapshotConfig struct {
	WorkspaceConfig
	JSON          bool
	Watch         bool
	Interval      time.Duration
	Count         int // 0: until interrupted
	CapacityProbe bool
	Timeout       time.Duration
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
	Ops         int // scenario load
	// CheckHandleSecrets: refuse handles with a wrong secret (default on
	// in demo, off in sim). OwnerActivity: volunteer the owner's activity
	// (the dbxtop extension; off by default).
	CheckHandleSecrets bool
	OwnerActivity      bool
	// NoProxy: no embedded proxy in scenario demo (--proxy=false).
	NoProxy bool
}
