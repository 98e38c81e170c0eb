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
	if (key == SortSeverity || key == "") && desc && byStatementID(ops) {
		severityFirst(ops)
		return
	}
	// The order is total (statement ids are unique within a workspace,
	// and the workspace breaks the rest), so pdqsort is deterministic,
	// and it is near-linear on the nearly sorted input of a refresh.
	slices.SortFunc(ops, operationOrder(key, desc))
}

// severityFirst is SortOperations by severity, most severe first, of ops
// already in statement id order (byStatementID; an engine's order): the
// unflagged operations keep their order, and the flagged ones are moved
// to the front, distributed by severity and flag count into their
// buckets in the order they come (a stable counting sort: their order
// within a bucket is already the tie-break's). At 100,000 flagged
// operations a comparison sort here was a tenth of a refresh, each
// comparison two views' flags away.
func severityFirst(ops []*OperationView) {
	// A bucket per (severity rank, flag count): most severe, then most
	// flags, first. More flags than an operation can carry (a hand-built
	// view) falls back to the comparison sort.
	const maxFlags = 7
	const nb = 3 * (maxFlags + 1)
	var count [nb]int
	nf := 0
	for _, o := range ops {
		if len(o.Flags) > 0 {
			nf++
		}
	}
	if nf == 0 {
		return
	}
	flagged := make([]*OperationView, 0, nf)
	buckets := make([]uint8, 0, nf)
	fits := true // every flagged view has a bucket
	w := len(ops) - 1
	for i := len(ops) - 1; i >= 0; i-- {
		o := ops[i]
		if len(o.Flags) == 0 {
			ops[w] = o
			w--
			continue
		}
		flagged = append(flagged, o)
		n := len(o.Flags)
		if n > maxFlags {
			fits = false
			buckets = append(buckets, 0)
			continue
		}
		b := (2-MaxSeverity(o.Flags).Rank())*(maxFlags+1) + (maxFlags - n) // Rank is 0, 1 or 2
		count[b]++
		buckets = append(buckets, uint8(b))
	}
	if !fits {
		slices.SortFunc(flagged, operationOrder(SortSeverity, true))
		copy(ops, flagged)
		return
	}
	var next [nb]int
	for b, at := 1, count[0]; b < nb; b++ {
		next[b] = at
		at += count[b]
	}
	for i := len(flagged) - 1; i >= 0; i-- { // flagged is in reverse id order
		b := buckets[i]
		ops[next[b]] = flagged[i]
		next[b]++
	}
}

// byStatementID reports whether ops are in the tie-break order of
// operationOrder: statement id, then workspace.
func byStatementID(ops []*OperationView) bool {
	for i := 1; i < len(ops); i++ {
		a, b := ops[i-1], ops[i]
		if c := strings.Compare(a.StatementID, b.StatementID); c > 0 || (c == 0 && a.Workspace > b.Workspace) {
			return false
		}
	}
	return true
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
