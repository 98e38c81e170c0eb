package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

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

// match reports whether the filter lists op; done is isDone(op).
func (f rowFilter) match(op *model.OperationView, done bool) bool {
	if f.workspace != "" && op.Workspace != f.workspace {
		return false
	}
	if f.flaggedOnly && len(op.Flags) == 0 {
		return false
	}
	if !f.showDone && done {
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
// OperationView so that sorting 100,000 rows stays in cache, and what the
// rows' pass after the sort needs (flagged, lw): it never goes back to
// the views.
type rowKey struct {
	idx     int32
	frozen  int32 // position when paused, -1 for rows that appeared since
	num     int64
	str     string
	secs    int64 // StartedAt, for ties
	nanos   int32
	lw      int16 // the flag cell's width (worst label and "+n"), 0: unflagged
	flagged bool
	id      string
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

// sortKeys puts keys in display order. Unpaused, and for the keys
// without a text, it compares only numbers and the id: a sort of 60,000
// rows every refresh was a third of the TUI's refresh work. Descending
// is the ascending comparison reversed as a whole, ties included.
func sortKeys(keys []rowKey, k sortKey, desc, paused bool) {
	switch {
	case paused:
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
	case k == sortState || k == sortUser || k == sortWarehouse:
		if desc {
			slices.SortFunc(keys, func(a, b rowKey) int { return cmpKeys(&b, &a) })
		} else {
			slices.SortFunc(keys, func(a, b rowKey) int { return cmpKeys(&a, &b) })
		}
	default: // str is "" in every key
		if desc {
			slices.SortFunc(keys, func(a, b rowKey) int { return cmpNumKeys(&b, &a) })
		} else {
			slices.SortFunc(keys, func(a, b rowKey) int { return cmpNumKeys(&a, &b) })
		}
	}
}

// cmpNumKeys is cmpKeys for keys whose str is empty.
func cmpNumKeys(a, b *rowKey) int {
	switch {
	case a.num != b.num:
		return cmpInt64(a.num, b.num)
	case a.secs != b.secs: // younger first, then by id, as cmpKeys
		return cmpInt64(b.secs, a.secs)
	case a.nanos != b.nanos:
		return cmpInt64(int64(b.nanos), int64(a.nanos))
	}
	return strings.Compare(a.id, b.id)
}

// rowOrder is a display order and everything the one pass over the
// snapshot that built it learnt on the way: the header's counts, how many
// finished rows are collapsed, the flag column's width, which rows are
// flagged and where the cursor's operation is. Each view is read once per
// refresh, here: at 100,000 operations every further pass over them was
// a cache miss per view, about 10 ms each (docs/performance.md).
type rowOrder struct {
	rows       []int      // indices into ops, in display order
	counts     flagCounts // every operation, whatever the filter; endpoints are the caller's
	doneHidden int        // finished-and-closed operations collapsed (d shows them)
	flagW      int        // widest flag label among the rows
	flaggedAt  []int      // display indices of flagged rows, ascending

	cursorID  string // the cursor this order was built for
	cursorOp  int    // index in ops of the cursor's operation, -1: not there
	cursorRow int    // its display index, -1: not listed
}

// buildRows returns the rows to show, in display order (the comparison
// is total, so an unstable sort is deterministic), with what one pass
// learnt of ops (rowOrder). When frozen is non-nil (pause) the frozen
// order wins: known ids keep their place, new ones follow in sort order.
func buildRows(ops []*model.OperationView, f rowFilter, k sortKey, desc bool, frozen map[string]int, g Glyphs, cursorID string) rowOrder {
	o := rowOrder{counts: newFlagCounts(), flagW: len("FLAG") + 2, cursorID: cursorID, cursorOp: -1, cursorRow: -1}
	o.counts.ops = len(ops)
	var lc labelCache
	keys := make([]rowKey, 0, len(ops))
	for i := range ops {
		op := ops[i]
		// The cursor's operation, preferring one the server still has
		// (findOp's choice).
		if cursorID != "" && op.StatementID == cursorID && (o.cursorOp < 0 || ops[o.cursorOp].Gone) {
			o.cursorOp = i
		}
		if op.State.Live() && !op.Gone {
			o.counts.running++
		}
		if len(op.Flags) > 0 {
			o.counts.flagged++
			o.counts.add(op.Flags)
		}
		done := isDone(op)
		if done && !f.showDone {
			o.doneHidden++
		}
		if !f.match(op, done) {
			continue
		}
		key := makeKey(op, i, k)
		if p, ok := frozen[op.StatementID]; ok {
			key.frozen = int32(p)
		}
		if len(op.Flags) > 0 {
			key.flagged = true
			key.lw = int16(lc.width(op.Flags, g))
		}
		keys = append(keys, key)
	}

	sortKeys(keys, k, desc, frozen != nil)
	o.rows = make([]int, len(keys))
	if o.counts.flagged > 0 {
		o.flaggedAt = make([]int, 0, min(o.counts.flagged, len(keys)))
	}
	for i := range keys {
		kk := &keys[i]
		o.rows[i] = int(kk.idx)
		if int(kk.idx) == o.cursorOp {
			o.cursorRow = i
		}
		if kk.flagged {
			o.flaggedAt = append(o.flaggedAt, i)
			o.flagW = max(o.flagW, min(int(kk.lw), 21))
		}
	}
	return o
}

// findOp is the index in ops of the operation with statement id id, by
// value, preferring one the server still has; -1 when there is none.
func findOp(ops []*model.OperationView, id string) int {
	at := -1
	if id == "" {
		return at
	}
	for i := range ops {
		if ops[i].StatementID == id && (at < 0 || ops[at].Gone) {
			at = i
		}
	}
	return at
}

// labelCache measures flag labels: a few distinct ones (kind, severity)
// in any snapshot, each measured once rather than once per flagged row.
type labelCache struct {
	n int
	e [8]struct {
		kind model.FlagKind
		sev  model.Severity
		w    int
	}
}

// width is the flag cell's width for fs: its worst flag's label, and
// "+n" for the n others.
func (c *labelCache) width(fs []model.Flag, g Glyphs) int {
	f, more := worstFlag(fs)
	w := -1
	for i := range c.n {
		if e := &c.e[i]; e.kind == f.Kind && e.sev == f.Severity {
			w = e.w
			break
		}
	}
	if w < 0 {
		w = ansi.StringWidth(flagLabel(f, g))
		if c.n < len(c.e) {
			c.e[c.n].kind, c.e[c.n].sev, c.e[c.n].w = f.Kind, f.Severity, w
			c.n++
		}
	}
	if more > 0 {
		w += 1 + len(strconv.Itoa(more))
	}
	return w
}
