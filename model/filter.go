package model

import (
	"fmt"
	"strings"
	"time"
)

// FilterSpec selects operations: the one filter that the TUI, snapshot,
// serve and attach apply (docs/model.md, "Filter"; the syntax of Text is
// in docs/operator-guide.md, "Filters"). The zero value keeps everything.
type FilterSpec struct {
	// Text is split on white space; every term must hold. A free word
	// must occur (ignoring case) in one of: statement id, user,
	// warehouse, state, client application, SQL, flag kinds. A keyed
	// term narrows one field: user:, client:, wh:, state:, flag: (a
	// comma separates alternatives), age>, age<, idle>, idle< (a
	// duration: 90s, 5m, 1h30m). ParseFilter says what is wrong with a
	// text; a term it refuses matches as a free word.
	Text string
	// FlaggedOnly keeps operations with at least one flag.
	FlaggedOnly bool
	// Workspace, when set, keeps only that workspace's operations.
	Workspace string
	// HideDone leaves out operations that are done (OperationView.Done).
	HideDone bool
	// Listing, when set, lets wh: match a warehouse's name as well as
	// its id (the snapshot's Listing; a pointer keeps FilterSpec
	// comparable).
	Listing *WarehouseListing
}

// FilterKeys are the keys a filter term may start with, in the order
// the docs list them.
var FilterKeys = []string{"user:", "client:", "wh:", "state:", "flag:", "age>", "age<", "idle>", "idle<"}

// filterTerm is one parsed term: a free word (key ""), a field match
// (alternatives in vals) or a duration bound.
type filterTerm struct {
	key  string // "", "user", "client", "wh", "state", "flag", "age", "idle"
	more bool   // for age and idle: > (else <)
	vals []string
	d    time.Duration
	// names maps warehouse id to name for wh: (nil: ids only).
	names map[string]string
}

// ParseFilter checks a filter text: nil when every term is a free word
// or a well-formed keyed term, else what is wrong and how to write it.
func ParseFilter(text string) error {
	_, err := parseFilter(text)
	return err
}

func parseFilter(text string) ([]filterTerm, error) {
	var out []filterTerm
	var errs []string
	for _, w := range filterFields(strings.ToLower(text)) {
		t, err := parseTerm(w)
		if err != nil {
			errs = append(errs, err.Error())
			t = filterTerm{vals: []string{w}} // matched as a free word
		}
		out = append(out, t)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("filter: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// filterFields splits a filter text on white space, except inside double
// quotes, which are dropped: client:"Databricks JDBC 2.6.36" is one term.
func filterFields(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, have = !quoted, true
		case !quoted && (r == ' ' || r == '\t' || r == '\n' || r == '\r'):
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// QuoteFilterValue is v as a filter value: in double quotes when it has
// white space (quotes inside it are dropped: the syntax has no escape).
func QuoteFilterValue(v string) string {
	v = strings.ReplaceAll(v, `"`, "")
	if strings.ContainsAny(v, " \t") || v == "" {
		return `"` + v + `"`
	}
	return v
}

// parseTerm parses one lower-cased term.
func parseTerm(w string) (filterTerm, error) {
	for _, k := range []string{"age", "idle"} {
		for _, op := range []string{">", "<"} {
			if v, ok := strings.CutPrefix(w, k+op); ok {
				d, err := time.ParseDuration(v)
				if err != nil || d < 0 {
					return filterTerm{}, fmt.Errorf("%s%s wants a duration such as 90s, 5m or 1h30m, not %q", k, op, v)
				}
				return filterTerm{key: k, more: op == ">", d: d}, nil
			}
		}
	}
	k, v, ok := strings.Cut(w, ":")
	if !ok || strings.Contains(k, "/") || k == "" {
		return filterTerm{vals: []string{w}}, nil // a free word (a URL or time of day keeps its colon)
	}
	switch k {
	case "user", "client", "wh", "state", "flag":
	default:
		if strings.ContainsAny(k, "0123456789") {
			return filterTerm{vals: []string{w}}, nil // "12:00" is a word
		}
		return filterTerm{}, fmt.Errorf("unknown key %q (keys: %s)", k+":", strings.Join(FilterKeys, " "))
	}
	var vals []string
	for _, a := range strings.Split(v, ",") {
		if a != "" {
			vals = append(vals, a)
		}
	}
	if len(vals) == 0 {
		return filterTerm{}, fmt.Errorf("%s: wants a value", k)
	}
	return filterTerm{key: k, vals: vals}, nil
}

// Match reports whether one operation passes the filter; age terms count
// from now (the snapshot's GeneratedAt).
func (f FilterSpec) Match(v *OperationView, now time.Time) bool { return f.Matcher(now)(v) }

// Matcher is Match with the filter's text parsed once, for a filter
// applied to many operations.
func (f FilterSpec) Matcher(now time.Time) func(v *OperationView) bool {
	terms, _ := parseFilter(f.Text)
	names := f.warehouseNames(terms)
	for i := range terms {
		terms[i].names = names
	}
	return func(v *OperationView) bool {
		switch {
		case f.Workspace != "" && v.Workspace != f.Workspace,
			f.FlaggedOnly && len(v.Flags) == 0,
			f.HideDone && v.Done():
			return false
		}
		for i := range terms {
			if !terms[i].match(v, now) {
				return false
			}
		}
		return true
	}
}

// match reports whether v satisfies one term.
func (t *filterTerm) match(v *OperationView, now time.Time) bool {
	switch t.key {
	case "":
		return hasTerm(v, t.vals[0])
	case "age":
		if v.StartedAt.IsZero() {
			return false // unknown age is neither older nor younger
		}
		return t.bound(now.Sub(v.StartedAt))
	case "idle":
		if v.InactiveFor == nil {
			return false // unknown or not running: no idle time to compare
		}
		return t.bound(*v.InactiveFor)
	}
	for _, a := range t.vals {
		if t.field(v, a) {
			return true
		}
	}
	return false
}

func (t *filterTerm) bound(d time.Duration) bool {
	if t.more {
		return d > t.d
	}
	return d < t.d
}

// field reports whether v's field for the term's key matches one
// alternative a: a part of the user, client application or warehouse;
// the whole state or flag kind.
func (t *filterTerm) field(v *OperationView, a string) bool {
	switch t.key {
	case "user":
		return containsFold(v.User, a)
	case "client":
		app := v.ClientApplication
		if app == "" {
			app = UnknownClient
		}
		return containsFold(app, a)
	case "wh":
		return containsFold(v.WarehouseID, a) || containsFold(t.names[v.WarehouseID], a)
	case "state":
		s := string(v.State)
		if v.Gone {
			s = "GONE"
		}
		return strings.EqualFold(s, a)
	case "flag":
		for _, fl := range v.Flags {
			if strings.EqualFold(string(fl.Kind), a) {
				return true
			}
		}
	}
	return false
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

// warehouseNames maps the listing's warehouse ids to names when a term
// needs them (a wh: term), else nil.
func (f FilterSpec) warehouseNames(terms []filterTerm) map[string]string {
	if f.Listing == nil || len(f.Listing.Warehouses) == 0 {
		return nil
	}
	for i := range terms {
		if terms[i].key == "wh" {
			m := make(map[string]string, len(f.Listing.Warehouses))
			for _, w := range f.Listing.Warehouses {
				m[w.ID] = w.Name
			}
			return m
		}
	}
	return nil
}

// containsFold is strings.Contains ignoring case; sub is lower case.
func containsFold(s, sub string) bool { return strings.Contains(strings.ToLower(s), sub) }

// FilterOperations returns the operations that match at now, in their
// order, in a new slice (the input is not modified).
func FilterOperations(ops []*OperationView, f FilterSpec, now time.Time) []*OperationView {
	match := f.Matcher(now)
	out := make([]*OperationView, 0, len(ops))
	for _, v := range ops {
		if match(v) {
			out = append(out, v)
		}
	}
	return out
}

// Filtered is the snapshot with only the operations f keeps at the
// snapshot's time, in the same order, and no endpoints: a filter selects
// operations, and its summary and exit status count only those it kept
// (snapshot --filter). Errors stay: what could not be observed still is.
func (s Snapshot) Filtered(f FilterSpec) Snapshot {
	f.Listing = s.Workspace.Listing
	s.Operations = FilterOperations(s.Operations, f, s.GeneratedAt)
	s.Endpoints = nil
	return s
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
