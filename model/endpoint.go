package model

import "time"

// Endpoint is a Vector Search endpoint with its capacity figures.
type Endpoint struct {
	Name       string
	Type       string // STANDARD, STORAGE_OPTIMIZED, …
	State      string // ONLINE, PROVISIONING, OFFLINE, …
	Indexes    []Index
	RowLimit   int64 // per-type default or configured override
	Exhausted  bool  // the server answered RESOURCE_EXHAUSTED / QUOTA_EXCEEDED
	LastError  *ErrorInfo
	Samples    []Sample // successive (time, rows) observations, oldest first
	ObservedAt time.Time
	Workspace  string // the watched workspace (context) when several are watched
}

// Index is one Vector Search index on an endpoint.
type Index struct {
	Name    string
	Rows    int64 // indexed_row_count
	Ready   bool
	Message string
}

// Sample is one capacity observation.
type Sample struct {
	At   time.Time
	Rows int64
}
