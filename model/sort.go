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

// SortOperations sorts in place by key, ascending or descending. Values
// that are unknown (no start time, no inactivity figure) sort last in
// both directions; ties always break on StatementID ascending (then on
// the input position) so that the order is total and stable across
// refreshes.
func SortOperations(ops []*OperationView, key SortKey, desc bool) {
	// The order is total (statement ids are unique within a workspace,
	// and the workspace breaks the rest), so pdqsort is deterministic,
	// and it is near-linear on the nearly sorted input of a refresh.
	slices.SortFunc(ops, operationOrder(key, desc))
}

// operationOrder is SortOperations' comparison: key, then statement id,
// then workspace.
func operationOrder(key SortKey, desc bool) func(a, b *OperationView) int {
	primary := opComparator(key)
	return func(a, b *OperationView) int {
		c, known := primary(a, b)
		if c != 0 {
			if desc && known {
				c = -c
			}
			return c
		}
		if c := strings.Compare(a.StatementID, b.StatementID); c != 0 {
			return c
		}
		return strings.Compare(a.Workspace, b.Workspace)
	}
}

// opComparator returns a comparison and whether both sides were known
// (when one side is unknown the result must not be reversed).
func opComparator(key SortKey) func(a, b *OperationView) (int, bool) {
	plain := func(f func(a, b *OperationView) int) func(a, b *OperationView) (int, bool) {
		return func(a, b *OperationView) (int, bool) { return f(a, b), true }
	}
	switch key {
	case SortState:
		return plain(func(a, b *OperationView) int { return cmp.Compare(stateRank(a.State), stateRank(b.State)) })
	case SortAge:
		// Older start = larger age.
		return func(a, b *OperationView) (int, bool) {
			return unknownLast(a.StartedAt.IsZero(), b.StartedAt.IsZero(), func() int { return b.StartedAt.Compare(a.StartedAt) })
		}
	case SortInactivity:
		return func(a, b *OperationView) (int, bool) {
			return unknownLast(a.InactiveFor == nil, b.InactiveFor == nil, func() int { return cmp.Compare(*a.InactiveFor, *b.InactiveFor) })
		}
	case SortUser:
		return plain(func(a, b *OperationView) int {
			return strings.Compare(strings.ToLower(a.User), strings.ToLower(b.User))
		})
	case SortWarehouse:
		return plain(func(a, b *OperationView) int { return strings.Compare(a.WarehouseID, b.WarehouseID) })
	case SortRetries:
		return plain(func(a, b *OperationView) int { return cmp.Compare(a.Poll.Retries, b.Poll.Retries) })
	case SortStatementID:
		return plain(func(a, b *OperationView) int { return 0 }) // the tie-break does it
	default: // SortSeverity: highest severity, then how many flags
		return plain(func(a, b *OperationView) int {
			if c := cmp.Compare(MaxSeverity(a.Flags).Rank(), MaxSeverity(b.Flags).Rank()); c != 0 {
				return c
			}
			return cmp.Compare(len(a.Flags), len(b.Flags))
		})
	}
}

func unknownLast(aUnknown, bUnknown bool, known func() int) (int, bool) {
	switch {
	case aUnknown && bUnknown:
		return 0, false
	case aUnknown:
		return 1, false
	case bUnknown:
		return -1, false
	}
	return known(), true
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
