package model

import "time"

// Defaults and bounds of the settings every reader shares: the command
// line's flags (cmd), the config file (config) and the engine (poller)
// all take them from here, so a default is written once. The flag
// thresholds' defaults are DefaultThresholds.
const (
	// DefaultRefresh is how often discovery and the capacity listing run.
	DefaultRefresh = 5 * time.Second
	// DefaultWindow is how far back clients[] aggregates (--window).
	DefaultWindow = time.Hour

	// MinRefresh keeps a slip of the finger (1ms) from turning dbxtop
	// into a load generator; it bounds every period an operator sets.
	MinRefresh = 100 * time.Millisecond
	// MinThreshold bounds the flag thresholds from below.
	MinThreshold = time.Second
	// MinWindow and MaxWindow bound the clients[] window.
	MinWindow = time.Minute
	MaxWindow = 7 * 24 * time.Hour
)
