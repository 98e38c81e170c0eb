package model

import "time"

// SnapshotSchema is the schema tag of PRODUCT.md §9.
const SnapshotSchema = "dbxtop.snapshot/v1"

// Workspace names what was observed.
type Workspace struct {
	Host       string   `json:"host"`
	Warehouses []string `json:"warehouses"`
}

// Snapshot is a consistent view of everything observed at one instant:
// what `snapshot --json`, export and `--watch` print (PRODUCT.md §9).
// Build it with NewSnapshot; it encodes to (and decodes from) the §9 JSON.
type Snapshot struct {
	GeneratedAt time.Time
	Workspace   Workspace
	Operations  []OperationView
	Endpoints   []EndpointView
	Errors      []ErrorInfo
}

// OperationView is an operation with its flags evaluated at GeneratedAt.
type OperationView struct {
	Operation
	InactiveFor *time.Duration // nil if unknown
	ReapedIn    *time.Duration // nil if unknown
	Flags       []Flag
}

// EndpointView is an endpoint with its derived capacity figures and flags.
type EndpointView struct {
	Endpoint
	Rows         int64
	Usage        float64
	GrowthPerMin float64
	ETAFull      *time.Duration // nil if not growing
	Flags        []Flag
}
