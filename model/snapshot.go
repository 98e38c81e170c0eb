package model

import "time"

// SnapshotSchema is the schema tag of docs/model.md.
const SnapshotSchema = "dbxtop.snapshot/v1"

// Workspace names what was observed.
type Workspace struct {
	Host       string   `json:"host"`
	Warehouses []string `json:"warehouses"` // the selection (--warehouse); empty: every warehouse
	// Listing is what the last successful warehouse listing saw; nil when
	// the sources do not list warehouses or none has succeeded yet. Not
	// in the snapshot JSON: it only explains an empty Operations view.
	Listing *WarehouseListing `json:"-"`
	// NotFollowed counts the ended operations dropped, since start, by the
	// bound on how many are followed (docs/model.md).
	NotFollowed int64 `json:"not_followed,omitempty"`
}

// WarehouseListing is what the last successful ListWarehouses said: how
// many SQL warehouses the credentials can see, and how many of those the
// selection (Workspace.Warehouses) kept. Visible 0 means the workspace
// shows this identity no warehouse at all; Matched 0 with Visible > 0
// means the selection names none of them.
type WarehouseListing struct {
	At      time.Time
	Visible int
	Matched int
	// Warehouses are the selected warehouses as the listing described
	// them (the Warehouses view), in listing order; shared, never
	// written once listed.
	Warehouses []WarehouseInfo
}

// WarehouseInfo is one SQL warehouse as ListWarehouses describes it.
// Cluster counts are nil when the listing did not give them; State is
// the listing's word (RUNNING, STOPPED, STARTING, …).
type WarehouseInfo struct {
	ID, Name, State, Size              string
	Clusters, MinClusters, MaxClusters *int
}

func (l *WarehouseListing) clone() *WarehouseListing {
	if l == nil {
		return nil
	}
	c := *l
	return &c
}

// Snapshot is a consistent view of everything observed at one instant:
// what `snapshot --json`, export and `--watch` print (docs/model.md).
// Build it with NewSnapshot; it encodes to (and decodes from) the snapshot JSON (docs/model.md).
type Snapshot struct {
	GeneratedAt time.Time
	Workspace   Workspace
	// Operations are shared: one view may sit in many snapshots (the
	// engine re-evaluates only what changed, docs/performance.md), so a
	// view is never modified once built; copy it to change it.
	Operations []*OperationView
	Endpoints  []EndpointView
	Errors     []ErrorInfo
	// Clients aggregates the recent window by client application and user
	// (see AggregateClients); filled by whoever knows the window.
	Clients []ClientStats
	// Workspaces is one entry per watched workspace when several are
	// watched (see Merge); nil for one.
	Workspaces []WorkspaceStatus

	// ordered: Operations are in SortOperations' order for SortSeverity,
	// most severe first. Every snapshot model builds, merges or decodes
	// is; one assembled by hand is not known to be (Ordered).
	ordered bool
}

// Ordered reports whether the operations are known to be in
// SortOperations' order for SortSeverity, most severe first: true for
// every snapshot model builds, merges or decodes, so that a reader
// showing that order need not sort again. A prefix of Operations keeps
// the order; anything else written to it must not.
func (s Snapshot) Ordered() bool { return s.ordered || len(s.Operations) < 2 }

// order puts the operations in SortOperations' order for SortSeverity,
// most severe first, and marks them so (Ordered). The mark is kept only
// where it says something, so that snapshots equal as values stay equal.
func (s *Snapshot) order() {
	SortOperations(s.Operations, SortSeverity, true)
	s.ordered = len(s.Operations) > 1
}

// OperationView is an operation with its flags evaluated at GeneratedAt.
// The operation is shared, never copied per view: views of one unchanged
// operation evaluated at different times (its running figures, its flag
// details) point at one cleaned copy, which nothing writes once a view
// holds it (docs/model.md, "Views"). A view always has one.
type OperationView struct {
	*Operation
	InactiveFor *time.Duration // nil if unknown
	ReapedIn    *time.Duration // nil if unknown
	Flags       []Flag
}

// EndpointView is an endpoint with its derived capacity figures and flags.
type EndpointView struct {
	Endpoint
	Rows         int64
	Usage        float64
	GrowthPerMin float64 // median over ForecastWindow, behind ETAFull
	// WriteRowsPerMin is the net rows/min of the last WriteRateWindow.
	WriteRowsPerMin float64
	ETAFull         *time.Duration // nil if not growing
	Flags           []Flag
}

// Summary counts what a snapshot holds (docs/model.md "summary"). It is
// always computed from the snapshot, never stored, so it cannot disagree
// with the rows.
type Summary struct {
	Operations         int `json:"operations"`          // every operation shown
	Running            int `json:"running"`             // PENDING or RUNNING on the server
	Flagged            int `json:"flagged"`             // operations with at least one flag
	Warnings           int `json:"warnings"`            // warning flags, operations and endpoints
	Critical           int `json:"critical"`            // critical flags, operations and endpoints
	Endpoints          int `json:"endpoints"`           // every endpoint shown
	EndpointsExhausted int `json:"endpoints_exhausted"` // endpoints with an EXHAUSTED flag
}

// NewSnapshot evaluates everything at now: each operation's inactivity,
// reaper countdown and flags, each endpoint's capacity figures and flags.
// Operations come in SortOperations' severity order (most severe first,
// ties as it says), endpoints by name; the inputs are copied, never
// aliased.
func NewSnapshot(now time.Time, ws Workspace, ops []Operation, eps []Endpoint, errs []ErrorInfo, th Thresholds) Snapshot {
	var views []*OperationView
	if len(ops) > 0 {
		views = make([]*OperationView, len(ops))
	}
	for i, op := range ops {
		views[i] = EvaluateView(op, now, th)
	}
	return SnapshotOf(now, ws, views, eps, errs)
}

// SnapshotOf assembles a snapshot from operation views already evaluated
// at now (EvaluateView, or a ViewCache): the views are shared, not
// copied, and views is sorted in place (it becomes the snapshot's).
// Endpoints and errors are evaluated and cleaned as NewSnapshot does.
func SnapshotOf(now time.Time, ws Workspace, views []*OperationView, eps []Endpoint, errs []ErrorInfo) Snapshot {
	SortOperations(views, SortSeverity, true)
	return snapshotOfOrdered(now, ws, views, eps, errs)
}

// SnapshotOfViews is SnapshotOf for views gathered with their sort
// entries (Views); the views become the snapshot's.
func SnapshotOfViews(now time.Time, ws Workspace, vs Views, eps []Endpoint, errs []ErrorInfo) Snapshot {
	sortByEntries(vs.views, vs.es, true)
	return snapshotOfOrdered(now, ws, vs.views, eps, errs)
}

// snapshotOfOrdered assembles a snapshot of views already in the one
// order (SortOperations for SortSeverity, most severe first).
func snapshotOfOrdered(now time.Time, ws Workspace, views []*OperationView, eps []Endpoint, errs []ErrorInfo) Snapshot {
	s := Snapshot{
		GeneratedAt: now,
		Workspace: Workspace{Host: ws.Host, Warehouses: append([]string(nil), ws.Warehouses...), Listing: ws.Listing.clone(),
			NotFollowed: ws.NotFollowed},
		Errors:     append([]ErrorInfo(nil), errs...),
		Operations: views,
		ordered:    len(views) > 1,
	}
	for _, ep := range eps {
		s.Endpoints = append(s.Endpoints, NewEndpointView(ep, now))
	}
	SortEndpoints(s.Endpoints)
	s.sanitize()
	return s
}

// Summary counts the snapshot's operations, flags and endpoints.
func (s Snapshot) Summary() Summary {
	sum := Summary{Operations: len(s.Operations), Endpoints: len(s.Endpoints)}
	count := func(flags []Flag) {
		for _, f := range flags {
			switch f.Severity {
			case SeverityWarning:
				sum.Warnings++
			case SeverityCritical:
				sum.Critical++
			}
		}
	}
	for _, o := range s.Operations {
		if o.State.Live() && !o.Gone {
			sum.Running++
		}
		if len(o.Flags) > 0 {
			sum.Flagged++
		}
		count(o.Flags)
	}
	for _, e := range s.Endpoints {
		if e.HasFlag(FlagExhausted) {
			sum.EndpointsExhausted++
		}
		count(e.Flags)
	}
	return sum
}
