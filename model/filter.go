package model

import "strings"

// FilterSpec selects operations. The zero value keeps everything.
type FilterSpec struct {
	// Text is split on white space; every term must occur (case-insensitive)
	// in one of: statement id, user, warehouse, SQL, state, flag kinds.
	Text string
	// FlaggedOnly keeps operations with at least one flag.
	FlaggedOnly bool
}

// Match reports whether one operation passes the filter.
func (f FilterSpec) Match(v *OperationView) bool {
	if f.FlaggedOnly && len(v.Flags) == 0 {
		return false
	}
	terms := strings.Fields(strings.ToLower(f.Text))
	if len(terms) == 0 {
		return true
	}
	fields := []string{v.StatementID, v.User, v.WarehouseID, v.SQL, string(v.State)}
	for _, fl := range v.Flags {
		fields = append(fields, string(fl.Kind))
	}
	for i := range fields {
		fields[i] = strings.ToLower(fields[i])
	}
	for _, t := range terms {
		found := false
		for _, s := range fields {
			if strings.Contains(s, t) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// FilterOperations returns the operations that match, in their order,
// in a new slice (the input is not modified).
func FilterOperations(ops []*OperationView, f FilterSpec) []*OperationView {
	out := make([]*OperationView, 0, len(ops))
	for _, v := range ops {
		if f.Match(v) {
			out = append(out, v)
		}
	}
	return out
}
