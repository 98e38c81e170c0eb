package model

import "time"

// Endpoint is a Vector Search endpoint with its capacity figures.
type Endpoint struct {
	Name         string
	Type         string // STANDARD, STORAGE_OPTIMIZED, …
	State        string // ONLINE, PROVISIONING, OFFLINE, …
	StateMessage string // endpoint_status.message, the server's words
	// NumIndexes is the endpoint's num_indexes (0 when the server did not
	// say; len(Indexes) is used then).
	NumIndexes int
	Indexes    []Index
	// Throughput is throughput_info.current_concurrency_utilization_percentage
	// (0..100+); nil when the server did not report it.
	Throughput *float64

	// The row limit and where it came from (see ResolveRowLimit and
	// docs/capacity.md). The inputs: TagLimit is the dbxtop_row_limit
	// custom tag (0 = none), ConfigLimit the config file's figure for this
	// endpoint (0 = none), Learned the limit learned from the server's
	// RESOURCE_EXHAUSTED (nil = none).
	RowLimit       int64
	RowLimitSource LimitSource
	RowLimitWhy    string
	TagLimit       int64
	ConfigLimit    int64
	Learned        *LearnedLimit

	Exhausted bool // the server answered RESOURCE_EXHAUSTED
	// ExhaustedVia is whose write was refused: LearnedViaProbe or
	// LearnedViaProxy (a client's upsert a dbxtop proxy saw; LastError
	// then carries the server's words and request id).
	ExhaustedVia string
	LastError    *ErrorInfo
	Samples      []Sample // successive (time, rows) observations, oldest first
	ObservedAt   time.Time
	Workspace    string // the watched workspace (context) when several are watched
	// Proxied is what a dbxtop proxy saw of the clients' writes to the
	// endpoint's indexes (--proxy); nil without a proxy.
	Proxied *ProxiedWrites
	// ListingError is set while endpoint listings fail: the endpoint is
	// the last one known, as of ObservedAt, kept until a listing succeeds.
	ListingError *ErrorInfo
}

// Index is one Vector Search index on an endpoint.
type Index struct {
	Name      string
	Type      string // index_type: DIRECT_ACCESS, DELTA_SYNC ("" unknown)
	Dimension int    // embedding dimension from the index spec (0 unknown)
	Rows      int64  // indexed_row_count
	Ready     bool
	Message   string
}

// Sample is one capacity observation.
type Sample struct {
	At   time.Time
	Rows int64
}

// ProxiedWrites sums a proxy's account of the writes to an endpoint's
// indexes (docs/proxy-vector.md): capacity refusals since the proxy
// started, and rows written and deleted over the last minute.
type ProxiedWrites struct {
	CapacityRefusals int64
	WrittenPerMin    float64
	DeletedPerMin    float64
	LastWriteAt      time.Time
}
