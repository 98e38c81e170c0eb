package tui

import (
	"cmp"
	"slices"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
)

// rowKey is one row's place in the order: model's sort entry (copied out
// of the view, so that sorting many rows stays in cache).
type rowKey struct {
	e      model.SortEntry
	frozen int32 // position when paused, -1 for rows that appeared since
}

// sortKeys puts keys in display order: model's order (CompareEntries),
// except that while paused the rows already shown keep their places and
// new ones follow.
func sortKeys(keys []rowKey, desc, paused bool) {
	if !paused {
		slices.SortFunc(keys, func(a, b rowKey) int { return model.CompareEntries(&a.e, &b.e, desc) })
		return
	}
	slices.SortFunc(keys, func(a, b rowKey) int {
		switch {
		case a.frozen >= 0 && b.frozen >= 0:
			return cmp.Compare(a.frozen, b.frozen)
		case a.frozen >= 0:
			return -1
		case b.frozen >= 0:
			return 1
		}
		return model.CompareEntries(&a.e, &b.e, desc)
	})
}

// rowOrder is a display order and what the screen needs with it: the
// header's counts, how many finished rows are collapsed, the flag
// column's width, which rows are flagged and where the cursor's
// operation is.
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
// is total, so an unstable sort is deterministic), with what the screen
// needs of ops (rowOrder), each found by its own plain pass. When frozen is non-nil (pause) the frozen
// order wins: known ids keep their place, new ones follow in sort order.
//
// ordered says ops are in model's order for severity, most severe first
// (model.Snapshot.Ordered): when that is the order asked for and nothing
// is frozen, the rows keep it, with neither a sort nor an entry per row
// (at many operations, reading each view's operation for its entry is a
// large part of a refresh).
func buildRows(ops []*model.OperationView, ordered bool, f model.FilterSpec, now time.Time, k model.SortKey, desc bool, frozen map[string]int, g Glyphs, cursorID string) rowOrder {
	o := rowOrder{counts: newFlagCounts(), flagW: len("FLAG") + 2, cursorID: cursorID, cursorOp: -1, cursorRow: -1}
	o.counts.ops = len(ops)
	for _, op := range ops {
		if op.State.Live() && !op.Gone {
			o.counts.running++
		}
		if len(op.Flags) > 0 {
			o.counts.flagged++
			o.counts.add(op.Flags)
		}
	}
	for _, op := range ops {
		if f.HideDone && op.Done() {
			o.doneHidden++
		}
	}
	match := f.Matcher(now)
	if ordered && k == model.SortSeverity && desc && frozen == nil {
		o.rows = make([]int, 0, len(ops))
		for i, op := range ops {
			if match(op) {
				o.rows = append(o.rows, i)
			}
		}
	} else {
		keys := make([]rowKey, 0, len(ops))
		for i, op := range ops {
			if !match(op) {
				continue
			}
			key := rowKey{frozen: -1, e: model.NewSortEntry(op, i, k)}
			if p, ok := frozen[op.StatementID]; ok {
				key.frozen = int32(p)
			}
			keys = append(keys, key)
		}
		sortKeys(keys, desc, frozen != nil)
		o.rows = make([]int, 0, len(keys))
		for i := range keys {
			o.rows = append(o.rows, int(keys[i].e.Index))
		}
	}
	var lc labelCache
	for r, i := range o.rows {
		if fs := ops[i].Flags; len(fs) > 0 {
			o.flaggedAt = append(o.flaggedAt, r)
			o.flagW = max(o.flagW, min(lc.width(fs, g), flagCellMax))
		}
	}
	o.cursorOp = findOp(ops, cursorID)
	if o.cursorOp >= 0 {
		o.cursorRow = slices.Index(o.rows, o.cursorOp)
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
		if isBetterMatch(ops, at, i, id) {
			at = i
		}
	}
	return at
}

// isBetterMatch says whether ops[i] is a better match for statement id
// than ops[at] (at < 0: none yet): it has the id, and the current match,
// if any, is one the server no longer has.
func isBetterMatch(ops []*model.OperationView, at, i int, id string) bool {
	return ops[i].StatementID == id && (at < 0 || ops[at].Gone)
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

// width is the flag cell's width for fs: its one flag's label, measured
// once per kind and severity; a row with several (few rows) is measured
// as flagCell draws it.
func (c *labelCache) width(fs []model.Flag, g Glyphs) int {
	if len(fs) > 1 {
		return flagCellWidth(fs, g)
	}
	f := fs[0]
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
	return w
}
