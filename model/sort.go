package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SortKey names an Operations-table column to sort by.
type SortKey string

const (
	SortSeverity    SortKey = "severity"
	SortState       SortKey = "state"
	SortAge         SortKey = "age"
	SortInactivity  SortKey = "inactivity"
	SortUser        SortKey = "user"
	SortWarehouse   SortKey = "warehouse"
	SortRetries     SortKey = "retries"
	SortStatementID SortKey = "id"
)

// SortKeys lists every key in the order the TUI cycles through them.
var SortKeys = []SortKey{SortSeverity, SortState, SortAge, SortInactivity, SortUser, SortWarehouse, SortRetries, SortStatementID}

// ParseSortKey accepts a SortKey name (case-insensitive).
func ParseSortKey(s string) (SortKey, error) {
	for _, k := range SortKeys {
		if strings.EqualFold(s, string(k)) {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown sort key %q (one of %v)", s, SortKeys)
}

// SortOperations sorts in place by key, ascending or descending: the one
// order of operations that the TUI, snapshot, serve and attach show
// (docs/model.md, "Order"). Each key orders by one figure:
//
//   - severity: the most severe flag, then how many flags
//   - state: along the lifecycle (pending, running, then the ended
//     states: finished, failed, canceled, closed; unknown last)
//   - age: how long ago it started (ascending: youngest first)
//   - inactivity: how long since the server last showed activity
//   - user: case-insensitive; warehouse: its id; retries: poll retries
//   - id: the statement id
//
// Values that are unknown (no start time, no inactivity figure) sort last
// in both directions. Ties, in both directions, go by start time, newest
// first (unknown last), then statement id, then workspace, then input
// position, so the order is total and stable across refreshes.
func SortOperations(ops []*OperationView, key SortKey, desc bool) {
	es := make([]SortEntry, len(ops))
	for i, v := range ops {
		es[i] = NewSortEntry(v, i, key)
	}
	sortByEntries(ops, es, desc)
}

// sortByEntries puts ops in the order of es, their entries (es[i] made of
// ops[i]).
func sortByEntries(ops []*OperationView, es []SortEntry, desc bool) {
	slices.SortFunc(es, func(a, b SortEntry) int { return CompareEntries(&a, &b, desc) })
	sorted := make([]*OperationView, len(ops))
	for i := range es {
		sorted[i] = ops[es[i].Index]
	}
	copy(ops, sorted)
}

// Views gathers operation views for a snapshot (SnapshotOfViews), each
// with its sort entry for the snapshot's order, made as it is added. Its
// owner adds a view right after evaluating it, while the operation is
// still in cache: a sort that makes its entries later reads every
// operation again, a cache miss each when they are many. The zero value
// is empty.
type Views struct {
	views []*OperationView
	es    []SortEntry
}

// MakeViews is an empty Views with room for n views.
func MakeViews(n int) Views {
	return Views{views: make([]*OperationView, 0, n), es: make([]SortEntry, 0, n)}
}

// Add appends v.
func (vs *Views) Add(v *OperationView) {
	vs.es = append(vs.es, NewSortEntry(v, len(vs.views), SortSeverity))
	vs.views = append(vs.views, v)
}

// SortEntry is what SortOperations' order needs of one view, copied out
// of it so that a sort of many views compares small values that sit side
// by side in memory rather than following a pointer per comparison.
// Callers that keep an order of their own (the TUI's table) sort entries
// with CompareEntries, so that it is the same order.
type SortEntry struct {
	// Index is the view's position in the slice the entry was made from:
	// the last tie-break, and how the caller finds the view again.
	Index   int32
	unknown bool   // the key's figure is unknown: last in both directions
	num     int64  // the key's figure, when it is a number
	str     string // the key's figure, when it is a text
	started int64  // start time in Unix nanoseconds, 0: unknown
	id, ws  string
}

// NewSortEntry is view v's entry for key; i is its position (Index).
func NewSortEntry(v *OperationView, i int, key SortKey) SortEntry {
	e := SortEntry{Index: int32(i), id: v.StatementID, ws: v.Workspace}
	if !v.StartedAt.IsZero() {
		e.started = v.StartedAt.UnixNano()
	}
	switch key {
	case SortState:
		e.num = int64(stateRank(v.State))
	case SortAge:
		// Older start = larger age; unknown start, unknown age.
		e.num, e.unknown = -e.started, e.started == 0
	case SortInactivity:
		if v.InactiveFor == nil {
			e.unknown = true
		} else {
			e.num = int64(*v.InactiveFor)
		}
	case SortUser:
		e.str = strings.ToLower(v.User)
	case SortWarehouse:
		e.str = v.WarehouseID
	case SortRetries:
		e.num = int64(v.Poll.Retries)
	case SortStatementID:
		e.str = v.StatementID
	default: // SortSeverity
		e.num = int64(MaxSeverity(v.Flags).Rank())<<32 | int64(len(v.Flags))
	}
	return e
}

// CompareEntries is SortOperations' comparison of two entries made for
// the same key: the key's figure (reversed when desc, unknown last), then
// the ties' order, which does not depend on the direction.
func CompareEntries(a, b *SortEntry, desc bool) int {
	switch {
	case a.unknown != b.unknown:
		if a.unknown {
			return 1
		}
		return -1
	case a.num != b.num || a.str != b.str:
		c := cmp.Compare(a.num, b.num)
		if c == 0 {
			c = strings.Compare(a.str, b.str)
		}
		if desc {
			c = -c
		}
		return c
	}
	switch {
	case a.started != b.started:
		if a.started == 0 {
			return 1 // unknown last
		}
		if b.started == 0 {
			return -1
		}
		return cmp.Compare(b.started, a.started) // newest first
	case a.id != b.id:
		return strings.Compare(a.id, b.id)
	case a.ws != b.ws:
		return strings.Compare(a.ws, b.ws)
	}
	return cmp.Compare(a.Index, b.Index)
}

func stateRank(s State) int {
	if r, ok := stateOrder[s]; ok {
		return r
	}
	return len(stateOrder)
}

// SortEndpoints orders endpoints by name.
func SortEndpoints(eps []EndpointView) {
	slices.SortStableFunc(eps, func(a, b EndpointView) int { return strings.Compare(a.Name, b.Name) })
}

// Age is how long ago the operation started, or nil when unknown.
func (v OperationView) Age(now time.Time) *time.Duration {
	if v.StartedAt.IsZero() {
		return nil
	}
	d := max(now.Sub(v.StartedAt), 0)
	return &d
}
