package model

import "time"

// FlagKind names a problem dbxtop flags (docs/model.md).
type FlagKind string

const (
	FlagInactive    FlagKind = "INACTIVE"
	FlagStale       FlagKind = "STALE"
	FlagUnclosed    FlagKind = "UNCLOSED"
	FlagCloseFailed FlagKind = "CLOSE_FAILED"
	FlagReaped      FlagKind = "REAPED"
	FlagCapacity    FlagKind = "CAPACITY"
	FlagExhausted   FlagKind = "EXHAUSTED"
	// Vector Search endpoint troubles beyond storage (docs/capacity.md).
	FlagEndpointState FlagKind = "ENDPOINT_STATE"
	FlagIndexNotReady FlagKind = "INDEX_NOT_READY"
	FlagIndexQuota    FlagKind = "INDEX_QUOTA"
	FlagThroughput    FlagKind = "THROUGHPUT"
)

// Severity orders flags; the zero value means "no flag".
type Severity string

const (
	SeverityNone     Severity = ""
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
)

// Flag is one raised flag with a human detail ("no client call for 1m12s;
// reaper in 5m58s").
type Flag struct {
	Kind     FlagKind `json:"kind"`
	Severity Severity `json:"severity"`
	Detail   string   `json:"detail"`
}

// Thresholds are the operator's flag thresholds (command-line flags).
type Thresholds struct {
	InactivityWarn    time.Duration // --inactivity-warn, default 60s
	ServerIdleTimeout time.Duration // --server-idle-timeout, default 430s
	LeakAfter         time.Duration // --leak-after, default 2m
	// ServerLeakTimeout is when the server's reaper of ended operations
	// nobody closed could act, counted from the later of the end and the
	// owner's last call (--server-leak-timeout, default 23m): how long a
	// proxy's proof that an ended operation is open holds.
	ServerLeakTimeout time.Duration
}

// DefaultThresholds are the command line's defaults.
var DefaultThresholds = Thresholds{
	InactivityWarn:    60 * time.Second,
	ServerIdleTimeout: 430 * time.Second,
	LeakAfter:         2 * time.Minute,
	ServerLeakTimeout: 23 * time.Minute,
}

// OperationFlagKinds are the kinds raised on operations, in the order
// screens list them; EndpointFlagKinds those raised on Vector Search
// endpoints. Together they are every FlagKind.
func OperationFlagKinds() []FlagKind {
	return []FlagKind{FlagInactive, FlagStale, FlagUnclosed, FlagCloseFailed, FlagReaped}
}

// EndpointFlagKinds: see OperationFlagKinds.
func EndpointFlagKinds() []FlagKind {
	return []FlagKind{FlagExhausted, FlagCapacity, FlagEndpointState, FlagThroughput, FlagIndexQuota, FlagIndexNotReady}
}
