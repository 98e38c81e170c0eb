package model

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func filterFixture() []*OperationView {
	warn := []Flag{{Kind: FlagInactive, Severity: SeverityWarning}}
	leak := []Flag{{Kind: FlagUnclosed, Severity: SeverityWarning}}
	return []*OperationView{
		{Operation: &Operation{StatementID: "a", State: StateRunning, User: "alice", WarehouseID: "wh-1", ClientApplication: "Databricks JDBC 2.6.36",
			StartedAt: t0.Add(-10 * time.Minute), SQL: "SELECT 1"}, InactiveFor: durp(3 * time.Minute), Flags: warn},
		{Operation: &Operation{StatementID: "b", State: StateFinished, User: "bob", WarehouseID: "wh-2", ClientApplication: "Databricks JDBC 2.6.36",
			StartedAt: t0.Add(-2 * time.Minute), SQL: "SELECT 2"}, Flags: leak},
		{Operation: &Operation{StatementID: "c", State: StateRunning, User: "carol", WarehouseID: "wh-1", ClientApplication: "databricks-sql-go",
			StartedAt: t0.Add(-30 * time.Second), SQL: "SELECT 3"}, InactiveFor: durp(5 * time.Second)},
		{Operation: &Operation{StatementID: "d", State: StatePending, User: "alice", WarehouseID: "wh-3"}},
	}
}

func TestFilterSyntax(t *testing.T) {
	ops := filterFixture()
	for _, c := range []struct {
		text string
		want []string
	}{
		{"", []string{"a", "b", "c", "d"}},
		{"user:alice", []string{"a", "d"}},
		{"USER:ALICE", []string{"a", "d"}},
		{"client:jdbc", []string{"a", "b"}},
		{"client:(unknown)", []string{"d"}},
		{"wh:wh-1", []string{"a", "c"}},
		{"state:running", []string{"a", "c"}},
		{"state:pending,finished", []string{"b", "d"}},
		{"flag:unclosed", []string{"b"}},
		{"flag:inactive,unclosed", []string{"a", "b"}},
		{"age>5m", []string{"a"}},
		{"age<1m", []string{"c"}}, // d's start is unknown: neither
		{"idle>1m", []string{"a"}},
		{"idle<1m", []string{"c"}},
		{"client:jdbc flag:unclosed", []string{"b"}},
		{"alice select", []string{"a"}},
		{"user:alice age>1m wh:wh-1", []string{"a"}},
		{"12:00", nil}, // a time of day is a word
		{`client:"databricks jdbc 2.6.36" user:bob`, []string{"b"}},
		{"client:" + QuoteFilterValue("Databricks JDBC 2.6.36"), []string{"a", "b"}},
		{`"select 1"`, []string{"a"}},
	} {
		if err := ParseFilter(c.text); err != nil {
			t.Errorf("%q: %v", c.text, err)
		}
		if got := ids(FilterOperations(ops, FilterSpec{Text: c.text}, t0)); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.text, got, c.want)
		}
	}
	// wh: matches the listed name too; without a listing, ids only.
	listing := &WarehouseListing{Warehouses: []WarehouseInfo{{ID: "wh-1", Name: "Prod ETL"}, {ID: "wh-2", Name: "adhoc"}}}
	if got := ids(FilterOperations(ops, FilterSpec{Text: "wh:etl", Listing: listing}, t0)); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("wh:etl with a listing: %v, want [a c]", got)
	}
	if got := ids(FilterOperations(ops, FilterSpec{Text: "wh:etl"}, t0)); got != nil {
		t.Errorf("wh:etl without a listing: %v, want none", got)
	}
	s := Snapshot{Operations: ops, GeneratedAt: t0}
	s.Workspace.Listing = listing
	if got := ids(s.Filtered(FilterSpec{Text: `wh:"prod etl"`}).Operations); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Snapshot.Filtered by name: %v, want [a c]", got)
	}
	for _, bad := range []string{"usr:alice", "age>soon", "idle<-1m", "flag:", "state:,"} {
		if err := ParseFilter(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := ParseFilter("usr:alice"); err == nil || !strings.Contains(err.Error(), "user:") {
		t.Errorf("the error does not list the keys: %v", err)
	}
}

// Every key docs/operator-guide.md documents filters: its example parses
// and keeps some operations of the fixture but not all; and every key
// the parser knows is documented.
func TestEveryDocumentedFilterKeyFilters(t *testing.T) {
	raw, err := os.ReadFile("../docs/operator-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "### Filters")
	if i < 0 {
		t.Fatal("docs/operator-guide.md has no Filters section")
	}
	sec := doc[i:]
	sec = sec[:strings.Index(sec[4:], "\n#")+4]
	examples := regexp.MustCompile("(?m)^\\| `([^`]+)`").FindAllStringSubmatch(sec, -1)
	if len(examples) < len(FilterKeys)-2 {
		t.Fatalf("only %d examples in the Filters table", len(examples))
	}
	ops := filterFixture()
	documented := map[string]bool{}
	for _, e := range examples {
		text := e[1]
		if err := ParseFilter(text); err != nil {
			t.Errorf("documented %q: %v", text, err)
		}
		got := FilterOperations(ops, FilterSpec{Text: text}, t0)
		if len(got) == 0 || len(got) == len(ops) {
			t.Errorf("documented %q keeps %d of %d operations: it does not filter", text, len(got), len(ops))
		}
		for _, k := range FilterKeys {
			if strings.HasPrefix(text, k) {
				documented[k] = true
			}
		}
		if strings.Contains(sec, "`"+text+"` (a free word)") {
			documented["word"] = true
		}
	}
	for _, k := range FilterKeys {
		if !documented[k] && !strings.Contains(sec, "`"+k) {
			t.Errorf("key %s is not documented in the Filters section", k)
		}
	}
	if !documented["word"] {
		t.Error("free words are not documented")
	}
}
