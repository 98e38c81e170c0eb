package model

import "strings"

// FilterSpec selects operations: the one filter that the TUI, snapshot,
// serve and attach apply (docs/model.md, "Filter"). The zero value keeps
// everything.
type FilterSpec struct {
	// Text is split on white space; every term must occur (ignoring
	// case) in one of: statement id, user, warehouse, state, client
	// application, SQL, flag kinds.
	Text string
	// FlaggedOnly keeps operations with at least one flag.
	FlaggedOnly bool
	// Workspace, when set, keeps only that workspace's operations.
	Workspace string
	// HideDone leaves out operations that are done (OperationView.Done).
	HideDone bool
}

// Match reports whether one operation passes the filter.
func (f FilterSpec) Match(v *OperationView) bool { return f.Matcher()(v) }

// Matcher is Match with the filter's text split once, for a filter applied
// to many operations.
func (f FilterSpec) Matcher() func(v *OperationView) bool {
	terms := strings.Fields(strings.ToLower(f.Text))
	return func(v *OperationView) bool {
		switch {
		case f.Workspace != "" && v.Workspace != f.Workspace,
			f.FlaggedOnly && len(v.Flags) == 0,
			f.HideDone && v.Done():
			return false
		}
		for _, t := range terms {
			if !hasTerm(v, t) {
				return false
			}
		}
		return true
	}
}

// hasTerm reports whether the lower-cased term t occurs in one of the
// fields Text searches.
func hasTerm(v *OperationView, t string) bool {
	if containsFold(v.StatementID, t) || containsFold(v.User, t) || containsFold(v.WarehouseID, t) ||
		containsFold(string(v.State), t) || containsFold(v.ClientApplication, t) || containsFold(v.SQL, t) {
		return true
	}
	for _, fl := range v.Flags {
		if containsFold(string(fl.Kind), t) {
			return true
		}
	}
	return false
}

// containsFold is strings.Contains ignoring case; sub is lower case.
func containsFold(s, sub string) bool { return strings.Contains(strings.ToLower(s), sub) }

// FilterOperations returns the operations that match, in their order,
// in a new slice (the input is not modified).
func FilterOperations(ops []*OperationView, f FilterSpec) []*OperationView {
	match := f.Matcher()
	out := make([]*OperationView, 0, len(ops))
	for _, v := range ops {
		if match(v) {
			out = append(out, v)
		}
	}
	return out
}

// Done reports whether the operation needs no more attention: it ended
// without a flag and is closed (or the server no longer has it, or it is
// known not to be open). The TUI collapses done operations by default.
func (v *OperationView) Done() bool {
	if len(v.Flags) > 0 || !v.State.Terminal() && !v.Gone {
		return false
	}
	return v.Gone || v.State == StateClosed || v.Close.State == CloseClosed ||
		(v.Open != nil && !*v.Open)
}
