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

// sortByName maps a config sort name (model.SortKey: "severity" is the
// flag column) to a sort key.
func sortByName(s string) (sortKey, bool) {
	if s == string(model.SortSeverity) {
		return sortFlag, true
	}
	for k, n := range sortNames {
		if n == s {
			return sortKey(k), true
		}
	}
	return 0, false
}

// rowFilter is what the operator narrowed the table to.
type rowFilter struct {
	text        string // lower-cased; matches id, user, warehouse, state, SQL, flags, client
	flaggedOnly bool
	showDone    bool   // list finished-and-closed operations (d)
	workspace   string // "" every workspace; else only this one (w cycles)
}

func (f rowFilter) match(op *model.OperationView) bool {
	if f.workspace != "" && op.Workspace != f.workspace {
		return false
	}
	if f.flaggedOnly && len(op.Flags) == 0 {
		return false
	}
	if !f.showDone && isDone(op) {
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

func worstRank(op *model.OperationView) int {
	r := 0
	for _, f := range op.Flags {
		r = max(r, f.Severity.Rank()*10+len(op.Flags))
	}
	return r
}

// inactivityKey is a known duration, or -1 so unknown inactivity sorts lowest.
func inactivityKey(d *time.Duration) time.Duration {
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

// rowKey is what sorting needs of one row, copied out of the (large)
// OperationView so that sorting 100,000 rows stays in cache.
type rowKey struct {
	idx    int32
	frozen int32 // position when paused, -1 for rows that appeared since
	num    int64
	str    string
	secs   int64 // StartedAt, for ties
	nanos  int32
	id     string
}

func makeKey(op *model.OperationView, i int, k sortKey) rowKey {
	r := rowKey{idx: int32(i), frozen: -1, secs: op.StartedAt.Unix(), nanos: int32(op.StartedAt.Nanosecond()), id: op.StatementID}
	switch k {
	case sortFlag:
		r.num = int64(worstRank(op))
	case sortAge:
		// Ascending is youngest first, so descending (the default
		// direction) lists the oldest first.
		r.num, r.str = 0, ""
	case sortInactivity:
		r.num = int64(inactivityKey(op.InactiveFor))
	case sortState:
		r.str = string(op.State)
	case sortUser:
		r.str = op.User
	case sortWarehouse:
		r.str = op.WarehouseID
	case sortRetries:
		r.num = int64(op.Poll.Retries)
	}
	return r
}

func cmpKeys(a, b *rowKey) int {
	if c := cmpInt64(a.num, b.num); c != 0 {
		return c
	}
	if c := strings.Compare(a.str, b.str); c != 0 {
		return c
	}
	// Ties (and the age key): younger first, then by id, so the order is
	// total and stable across refreshes.
	if c := cmpInt64(b.secs, a.secs); c != 0 {
		return c
	}
	if c := cmpInt64(int64(b.nanos), int64(a.nanos)); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

func cmpInt64(a, b int64) int {
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
// When frozen is non-nil (pause) the frozen order wins: known ids keep
// their place, new ones follow in sort order.
func buildRows(ops []*model.OperationView, f rowFilter, k sortKey, desc bool, frozen map[string]int) []int {
	keys := make([]rowKey, 0, len(ops))
	for i := range ops {
		if f.match(ops[i]) {
			key := makeKey(ops[i], i, k)
			if p, ok := frozen[ops[i].StatementID]; ok {
				key.frozen = int32(p)
			}
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, b rowKey) int {
		switch {
		case a.frozen >= 0 && b.frozen >= 0:
			return cmpInt(int(a.frozen), int(b.frozen))
		case a.frozen >= 0:
			return -1
		case b.frozen >= 0:
			return 1
		}
		c := cmpKeys(&a, &b)
		if desc {
			c = -c
		}
		return c
	})
	rows := make([]int, len(keys))
	for i := range keys {
		rows[i] = int(keys[i].idx)
	}
	return rows
}
