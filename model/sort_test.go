package model

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

func durp(d time.Duration) *time.Duration { return &d }

func ids(ops []*OperationView) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o.StatementID)
	}
	return out
}

func sortFixture() []*OperationView {
	warn := []Flag{{Kind: FlagInactive, Severity: SeverityWarning}}
	crit := []Flag{{Kind: FlagCloseFailed, Severity: SeverityCritical}}
	return []*OperationView{
		{Operation: &Operation{StatementID: "d", State: StateFinished, User: "Bob", WarehouseID: "w2", StartedAt: t0.Add(-time.Minute), Poll: PollStats{Retries: 1}}},
		{Operation: &Operation{StatementID: "b", State: StateRunning, User: "alice", WarehouseID: "w1", StartedAt: t0.Add(-time.Hour), Poll: PollStats{Retries: 5}}, InactiveFor: durp(time.Minute), Flags: warn},
		{Operation: &Operation{StatementID: "c", State: StatePending, User: "carol", WarehouseID: "w1"}, InactiveFor: durp(time.Hour), Flags: crit},
		{Operation: &Operation{StatementID: "a", State: StateRunning, User: "alice", WarehouseID: "w2", StartedAt: t0.Add(-2 * time.Minute), Poll: PollStats{Retries: 5}}, Flags: warn},
	}
}

func TestSortOperations(t *testing.T) {
	cases := []struct {
		key  SortKey
		desc bool
		want []string
	}{
		{SortSeverity, true, []string{"c", "a", "b", "d"}},
		{SortSeverity, false, []string{"d", "a", "b", "c"}},
		{SortState, false, []string{"c", "a", "b", "d"}},
		{SortAge, true, []string{"b", "a", "d", "c"}},         // oldest first, unknown last
		{SortAge, false, []string{"d", "a", "b", "c"}},        // unknown still last
		{SortInactivity, true, []string{"c", "b", "d", "a"}},  // unknown last, ties newest first
		{SortInactivity, false, []string{"b", "c", "d", "a"}}, // unknown still last
		{SortUser, false, []string{"a", "b", "d", "c"}},       // case-insensitive
		{SortWarehouse, false, []string{"b", "c", "d", "a"}},  // ties: newest start first, unknown start last
		{SortRetries, true, []string{"a", "b", "d", "c"}},
		{SortStatementID, false, []string{"a", "b", "c", "d"}},
		{SortStatementID, true, []string{"d", "c", "b", "a"}},
	}
	for _, c := range cases {
		ops := sortFixture()
		SortOperations(ops, c.key, c.desc)
		if got := ids(ops); !slices.Equal(got, c.want) {
			t.Errorf("sort %s desc=%v: %v, want %v", c.key, c.desc, got, c.want)
		}
	}
}

// The ties' order does not depend on the direction: reversing a key
// reverses the key's figure only.
func TestSortTiesKeepTheirOrderBothWays(t *testing.T) {
	mk := func(id string, start time.Duration) *OperationView {
		return &OperationView{Operation: &Operation{StatementID: id, State: StateRunning, StartedAt: t0.Add(-start)}}
	}
	for _, desc := range []bool{false, true} {
		ops := []*OperationView{mk("b", time.Hour), mk("c", time.Minute), mk("a", time.Hour), {Operation: &Operation{StatementID: "0", State: StateRunning}}}
		SortOperations(ops, SortState, desc)
		if got, want := ids(ops), []string{"c", "a", "b", "0"}; !slices.Equal(got, want) {
			t.Errorf("desc=%v: %v, want %v (newest start first, then id, unknown start last)", desc, got, want)
		}
	}
}

func TestParseSortKey(t *testing.T) {
	for _, k := range SortKeys {
		if got, err := ParseSortKey(string(k)); err != nil || got != k {
			t.Errorf("ParseSortKey(%q) = %q, %v", k, got, err)
		}
	}
	if _, err := ParseSortKey("colour"); err == nil {
		t.Error("ParseSortKey accepted an unknown key")
	}
}

func TestFilterOperations(t *testing.T) {
	ops := sortFixture()
	ops[0].SQL = "SELECT * FROM sales"
	ops[0].Close.State = CloseClosed // finished and closed: done
	ops[1].ClientApplication = "Tableau 2025.3"
	ops[3].Workspace = "ws-x"
	cases := []struct {
		spec FilterSpec
		want []string
	}{
		{FilterSpec{}, []string{"d", "b", "c", "a"}},
		{FilterSpec{FlaggedOnly: true}, []string{"b", "c", "a"}},
		{FilterSpec{Text: "ALICE"}, []string{"b", "a"}},
		{FilterSpec{Text: "inactive"}, []string{"b", "a"}},
		{FilterSpec{Text: "close_failed"}, []string{"c"}},
		{FilterSpec{Text: "from sales"}, []string{"d"}}, // every term must match
		{FilterSpec{Text: "w2 alice"}, []string{"a"}},
		{FilterSpec{Text: "pending"}, []string{"c"}},
		{FilterSpec{Text: "w1", FlaggedOnly: true}, []string{"b", "c"}},
		{FilterSpec{Text: "nobody"}, nil},
		{FilterSpec{Text: "tableau"}, []string{"b"}},
		{FilterSpec{Workspace: "ws-x"}, []string{"a"}},
		{FilterSpec{HideDone: true}, []string{"b", "c", "a"}},
		{FilterSpec{HideDone: true, Text: "sales"}, nil},
	}
	for _, c := range cases {
		got := ids(FilterOperations(ops, c.spec, time.Time{}))
		if !slices.Equal(got, c.want) {
			t.Errorf("filter %+v: %v, want %v", c.spec, got, c.want)
		}
	}
	if ids(ops)[0] != "d" {
		t.Error("FilterOperations modified its input")
	}
}

// A snapshot's operations (what snapshot prints, serve sends and attach
// receives) are in SortOperations' severity order, most severe first,
// whatever order the views came in.
func TestSnapshotIsInModelsOrder(t *testing.T) {
	views := sortFixture()
	views = append(views, &OperationView{Operation: &Operation{StatementID: "e", State: StateRunning, StartedAt: t0}, Flags: views[1].Flags})
	want := slices.Clone(views)
	SortOperations(want, SortSeverity, true)
	slices.Reverse(views)
	s := SnapshotOf(t0, Workspace{}, slices.Clone(views), nil, nil)
	if got := ids(s.Operations); !slices.Equal(got, ids(want)) || !s.Ordered() {
		t.Errorf("snapshot order %v (says in order: %v), SortOperations' %v", got, s.Ordered(), ids(want))
	}
	// The engine's path: views gathered with their entries as they come.
	vs := MakeViews(len(views))
	for _, v := range views {
		vs.Add(v)
	}
	e := SnapshotOfViews(t0, Workspace{}, vs, nil, nil)
	if got := ids(e.Operations); !slices.Equal(got, ids(want)) || !e.Ordered() {
		t.Errorf("SnapshotOfViews order %v (says in order: %v), SortOperations' %v", got, e.Ordered(), ids(want))
	}
	// Merged, and decoded from a peer that sent another order: model's
	// order, and saying so (the TUI then keeps it without sorting).
	m := Merge([]NamedSnapshot{{Name: "a", Snapshot: s}})
	hand := s
	hand.Operations = slices.Clone(views) // reversed
	b, err := json.Marshal(hand)
	if err != nil {
		t.Fatal(err)
	}
	var dec Snapshot
	if err := json.Unmarshal(b, &dec); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]Snapshot{"merged": m, "decoded": dec} {
		if !slices.Equal(ids(got.Operations), ids(want)) || !got.Ordered() {
			t.Errorf("%s: order %v (says in order: %v), SortOperations' %v", name, ids(got.Operations), got.Ordered(), ids(want))
		}
	}
	if (Snapshot{Operations: views}).Ordered() {
		t.Error("a snapshot assembled by hand says it is in model's order")
	}
}
