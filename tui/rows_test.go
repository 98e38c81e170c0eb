package tui

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
)

// TestRowOrderAgreesWithSeparatePasses: what buildRows finds
// out on the way (counts, collapsed rows, flag column width, flagged
// rows, the cursor) is what a pass of its own over the views gives, for
// every sort, direction, filter and kind of cursor: the view's own id, a
// copy of it, one that is gone.
func TestRowOrderAgreesWithSeparatePasses(t *testing.T) {
	s := fixtureSnapshot()
	big := bigSnapshot(300)
	for i, op := range big.Operations {
		if i%7 == 0 { // more than one flag: the "+n" of the width
			op.Flags = append(op.Flags, model.Flag{Kind: model.FlagStale, Severity: model.SeverityCritical})
		}
	}
	ops := append(slices.Clone(s.Operations), big.Operations...)
	noEndpoints := model.Snapshot{Operations: ops}
	wantCounts := countFlags(&noEndpoints)
	// In model's order, as snapshots come (buildRows then checks the
	// order instead of sorting, for the snapshot's own key), and not.
	inOrder := slices.Clone(ops)
	model.SortOperations(inOrder, model.SortSeverity, true)
	filters := []model.FilterSpec{{HideDone: true}, {}, {HideDone: true, FlaggedOnly: true}, {HideDone: true, Text: "wh-1"}, {Text: "select"}}
	var cursors []string
	for _, i := range []int{0, 3, len(ops) / 2, len(ops) - 1} {
		cursors = append(cursors, ops[i].StatementID, strings.Clone(ops[i].StatementID))
	}
	cursors = append(cursors, "", "no-such-statement")
	for _, g := range []Glyphs{unicodeGlyphs, asciiGlyphs} {
		for _, k := range model.SortKeys {
			for _, desc := range []bool{false, true} {
				for fi, f := range filters {
					for _, cur := range cursors {
						name := fmt.Sprintf("sort=%s desc=%v filter=%d cursor=%q", k, desc, fi, cur)
						for _, ops := range [][]*model.OperationView{ops, inOrder} {
							o := buildRows(ops, len(ops) > 0 && ops[0] == inOrder[0], f, time.Time{}, k, desc, nil, g, cur)
							checkRowOrder(t, name, ops, f, g, cur, o, wantCounts)
						}
					}
				}
			}
		}
	}
}

func checkRowOrder(t *testing.T, name string, ops []*model.OperationView, f model.FilterSpec, g Glyphs, cur string, o rowOrder, want flagCounts) {
	t.Helper()
	if o.counts.ops != want.ops || o.counts.running != want.running || o.counts.flagged != want.flagged ||
		!maps.Equal(o.counts.warn, want.warn) || !maps.Equal(o.counts.crit, want.crit) {
		t.Fatalf("%s: counts %+v, a pass of their own %+v", name, o.counts, want)
	}
	done := 0
	for _, op := range ops {
		if op.Done() && f.HideDone {
			done++
		}
	}
	var flaggedAt []int
	flagW := len("FLAG") + 2
	for i, r := range o.rows {
		op := ops[r]
		if !f.Match(op, time.Time{}) {
			t.Fatalf("%s: row %d (%s) does not match the filter", name, i, op.StatementID)
		}
		if len(op.Flags) > 0 {
			flaggedAt = append(flaggedAt, i)
			lw := ansi.StringWidth(flagCell(op.Flags, g, flagCellMax))
			flagW = max(flagW, min(lw, flagCellMax))
		}
	}
	if o.doneHidden != done || o.flagW != flagW || !slices.Equal(o.flaggedAt, flaggedAt) {
		t.Fatalf("%s: done %d flagW %d flagged %v; separately done %d flagW %d flagged %v", name, o.doneHidden, o.flagW, o.flaggedAt, done, flagW, flaggedAt)
	}
	wantOp, wantRow := -1, -1
	for i, op := range ops {
		if cur != "" && op.StatementID == cur {
			wantOp = i
		}
	}
	for i, r := range o.rows {
		if cur != "" && ops[r].StatementID == cur {
			wantRow = i
		}
	}
	if (wantOp < 0) != (o.cursorOp < 0) || (o.cursorOp >= 0 && ops[o.cursorOp].StatementID != cur) || o.cursorRow != wantRow {
		t.Fatalf("%s: cursor at op %d row %d; separately op %d row %d", name, o.cursorOp, o.cursorRow, wantOp, wantRow)
	}
}

// TestTableOrderIsModels: for every sort key and direction, the TUI's
// order of one snapshot is the order docs/model.md ("Order") describes,
// as docOrder writes it without model's comparator; model.SortOperations
// gives the same. Many ties (same state, user, start time) make the ties'
// order count.
func TestTableOrderIsModels(t *testing.T) {
	s := fixtureSnapshot()
	big := bigSnapshot(300)
	rng := rand.New(rand.NewPCG(7, 16))
	for _, op := range big.Operations {
		o := *op.Operation
		o.StartedAt = o.StartedAt.Truncate(time.Hour).Add(time.Duration(rng.IntN(3)) * time.Minute)
		o.User = []string{"alice", "Alice", "bob"}[rng.IntN(3)]
		op.Operation = &o
	}
	unordered := append(slices.Clone(s.Operations), big.Operations...)
	// As snapshots come (in model's order for severity, most severe
	// first, and saying so: buildRows keeps that order without sorting),
	// and assembled by hand.
	ordered := model.SnapshotOf(time.Now(), model.Workspace{}, slices.Clone(unordered), nil, nil)
	if !ordered.Ordered() {
		t.Fatal("a snapshot model built does not say it is in model's order")
	}
	cases := []struct {
		name    string
		ops     []*model.OperationView
		ordered bool
	}{{"by hand", unordered, false}, {"built by model", ordered.Operations, true}, {"sorted, not saying so", ordered.Operations, false}}
	for _, c := range cases {
		ops := c.ops
		for _, k := range model.SortKeys {
			for _, desc := range []bool{false, true} {
				o := buildRows(ops, c.ordered, model.FilterSpec{}, time.Time{}, k, desc, nil, unicodeGlyphs, "")
				got := make([]*model.OperationView, len(o.rows))
				for i, r := range o.rows {
					got[i] = ops[r]
				}
				want := docOrder(ops, k, desc)
				if !slices.Equal(got, want) {
					t.Fatalf("%s, sort %s desc=%v: the table's order differs from docs/model.md's", c.name, k, desc)
				}
				sorted := slices.Clone(ops)
				model.SortOperations(sorted, k, desc)
				if !slices.Equal(sorted, want) {
					t.Fatalf("%s, sort %s desc=%v: model.SortOperations differs from docs/model.md's order", c.name, k, desc)
				}
			}
		}
	}
}

// countFlags is the header's counts of a whole snapshot in a pass of its
// own: what buildRows must count.
func countFlags(s *model.Snapshot) flagCounts {
	c := newFlagCounts()
	c.ops = len(s.Operations)
	for i := range s.Operations {
		op := s.Operations[i]
		if op.State.Live() && !op.Gone {
			c.running++
		}
		if len(op.Flags) > 0 {
			c.flagged++
		}
		c.add(op.Flags)
	}
	for i := range s.Endpoints {
		c.add(s.Endpoints[i].Flags)
	}
	return c
}

// A cursor moved while a snapshot was in flight stays where the operator
// put it: the order is applied (it did not change), the cursor found for
// the old position is not.
func TestCursorMovedDuringAFetchStaysPut(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	msg := m.fetch()().(snapMsg)
	press(m, "j", "j")
	want := m.selected()
	must(t, want != nil && msg.rows.cursorID != want.StatementID, "the cursor did not move off the fetched position")
	m.Update(msg)
	got := m.selected()
	must(t, got != nil && got.StatementID == want.StatementID && m.ops.cursorRow == 2,
		"cursor on %v (row %d) after the snapshot, want %s at row 2", got, m.ops.cursorRow, want.StatementID)
}

// docOrder is the order of docs/model.md ("Order and filter"), written
// from its table and its rule for unknowns and ties, independently of
// model's SortEntry and CompareEntries.
func docOrder(ops []*model.OperationView, key model.SortKey, desc bool) []*model.OperationView {
	lifecycle := []model.State{model.StatePending, model.StateRunning, model.StateFinished,
		model.StateFailed, model.StateCanceled, model.StateClosed}
	// figure is the key's value of v: a number or a text, or unknown.
	figure := func(v *model.OperationView) (known bool, n int64, s string) {
		switch key {
		case model.SortSeverity:
			return true, int64(model.MaxSeverity(v.Flags).Rank())*1000 + int64(len(v.Flags)), ""
		case model.SortState:
			i := slices.Index(lifecycle, v.State)
			if i < 0 {
				i = len(lifecycle) // UNKNOWN last
			}
			return true, int64(i), ""
		case model.SortAge: // youngest first: the latest start
			return !v.StartedAt.IsZero(), -v.StartedAt.UnixNano(), ""
		case model.SortInactivity:
			if v.InactiveFor == nil {
				return false, 0, ""
			}
			return true, int64(*v.InactiveFor), ""
		case model.SortUser:
			return true, 0, strings.ToLower(v.User)
		case model.SortWarehouse:
			return true, 0, v.WarehouseID
		case model.SortRetries:
			return true, int64(v.Poll.Retries), ""
		default: // model.SortStatementID
			return true, 0, v.StatementID
		}
	}
	out := slices.Clone(ops)
	slices.SortStableFunc(out, func(a, b *model.OperationView) int {
		ka, na, sa := figure(a)
		kb, nb, sb := figure(b)
		if ka != kb { // unknown last, in both directions
			if ka {
				return -1
			}
			return 1
		}
		c := cmp.Compare(na, nb)
		if c == 0 {
			c = strings.Compare(sa, sb)
		}
		if desc {
			c = -c
		}
		if c != 0 {
			return c
		}
		// Ties: newest start first (unknown last), statement id,
		// workspace, then input position (the sort is stable).
		if za, zb := a.StartedAt.IsZero(), b.StartedAt.IsZero(); za != zb {
			if za {
				return 1
			}
			return -1
		}
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		if c := strings.Compare(a.StatementID, b.StatementID); c != 0 {
			return c
		}
		return strings.Compare(a.Workspace, b.Workspace)
	})
	return out
}
