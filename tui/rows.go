package tui

import (
	"slices"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// sortKey is a column the Operations table can be ordered by; `s` cycles
// through them in this order.
type sortKey int

const (
	sortFlag sortKey = iota
	sortAge
	sortInactivity
	sortState
	sortUser
	sortWarehouse
	sortRetries
	sortID
	numSortKeys
)

var sortNames = [numSortKeys]string{"flag", "age", "inactivity", "state", "user", "warehouse", "retries", "id"}

func (k sortKey) String() string { return sortNames[k] }

// rowFilter is what the operator narrowed the table to.
type rowFilter struct {
	text        string // lower-cased; matches id, user, warehouse, state, SQL, flags, client
	flaggedOnly bool
}

func (f rowFilter) match(op *model.OperationView) bool {
	if f.flaggedOnly && len(op.Flags) == 0 {
		return false
	}
	if f.text == "" {
		return true
	}
	if containsFold(op.StatementID, f.text) || containsFold(op.User, f.text) ||
		containsFold(op.WarehouseID, f.text) || containsFold(string(op.State), f.text) ||
		containsFold(op.ClientApplication, f.text) || containsFold(op.SQL, f.text) {
		return true
	}
	for _, fl := range op.Flags {
		if containsFold(string(fl.Kind), f.text) {
			return true
		}
	}
	return false
}

// containsFold is strings.Contains, ignoring case; sub is already lower.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}

// compareOps orders two operations by key, ascending; ties fall back to
// age (oldest first) and then id so the order is total and stable across
// refreshes.
func compareOps(a, b *model.OperationView, k sortKey) int {
	c := 0
	switch k {
	case sortFlag:
		c = cmpInt(worstRank(a), worstRank(b))
	case sortAge:
		// Older first when ascending means "larger age": compare start
		// times reversed.
		c = b.StartedAt.Compare(a.StartedAt)
	case sortInactivity:
		c = cmpInt(int(durOr(a.InactiveFor)), int(durOr(b.InactiveFor)))
	case sortState:
		c = strings.Compare(string(a.State), string(b.State))
	case sortUser:
		c = strings.Compare(a.User, b.User)
	case sortWarehouse:
		c = strings.Compare(a.WarehouseID, b.WarehouseID)
	case sortRetries:
		c = cmpInt(a.Poll.Retries, b.Poll.Retries)
	}
	if c != 0 {
		return c
	}
	if c = b.StartedAt.Compare(a.StartedAt); c != 0 {
		return c
	}
	return strings.Compare(a.StatementID, b.StatementID)
}

func worstRank(op *model.OperationView) int {
	r := 0
	for _, f := range op.Flags {
		r = max(r, sevRank(f.Severity)*10+len(op.Flags))
	}
	return r
}

// durOr is a known duration, or -1 so unknown inactivity sorts lowest.
func durOr(d *time.Duration) time.Duration {
	if d == nil {
		return -1
	}
	return *d
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// buildRows returns the indices into ops of the rows to show, in display
// order (the comparison is total, so an unstable sort is deterministic).
// When frozen is non-nil (pause) the frozen order wins: known ids
// keep their place, new ones follow in sort order.
func buildRows(ops []model.OperationView, f rowFilter, k sortKey, desc bool, frozen map[string]int) []int {
	rows := make([]int, 0, len(ops))
	for i := range ops {
		if f.match(&ops[i]) {
			rows = append(rows, i)
		}
	}
	slices.SortFunc(rows, func(a, b int) int {
		if frozen != nil {
			pa, oka := frozen[ops[a].StatementID]
			pb, okb := frozen[ops[b].StatementID]
			switch {
			case oka && okb:
				return cmpInt(pa, pb)
			case oka:
				return -1
			case okb:
				return 1
			}
		}
		c := compareOps(&ops[a], &ops[b], k)
		if desc {
			c = -c
		}
		return c
	})
	return rows
}
