package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// fleetSnapshot is the fixture as two workspaces: "prod" holds the odd
// operations, "staging" the even ones; staging is down.
func fleetSnapshot() model.Snapshot {
	s := fixtureSnapshot()
	for i := range s.Operations {
		s.Operations[i].Workspace = "prod"
		if i%2 == 1 {
			s.Operations[i].Workspace = "staging"
		}
	}
	s.Workspaces = []model.WorkspaceStatus{{Name: "prod", Up: true}, {Name: "staging", Up: false}}
	d := 430 * time.Second
	s.Clients = []model.ClientStats{
		{ClientApplication: "Databricks JDBC 2.6.36", User: "etl@corp", Statements: 20, Orphans: 14, Leaks: 2, P95Duration: &d},
		{ClientApplication: "dbt", User: "ann@corp", Statements: 5},
	}
	return s
}

func TestWorkspaceColumnAndSwitcher(t *testing.T) {
	e := newFakeEngine(fleetSnapshot())
	m := syncModel(t, e, testOptions(), 140, 30)
	out := plain(m)
	must(t, strings.Contains(out, "WORKSPACE") && strings.Contains(out, "staging") && strings.Contains(out, "2 workspaces (w: one)"),
		"no WORKSPACE column with two workspaces:\n%s", out)
	must(t, strings.Contains(out, "prod up") && strings.Contains(out, "staging DOWN"), "header does not say which workspace is down:\n%s", out)
	all := len(ids(m))
	press(m, "w")
	out = plain(m)
	for _, id := range ids(m) {
		for _, op := range e.Snapshot().Operations {
			must(t, op.StatementID != id || op.Workspace == "prod", "w shows %s of %s", id, op.Workspace)
		}
	}
	must(t, len(ids(m)) < all && strings.Contains(out, "workspace prod (w: next)"), "switcher did not narrow to prod:\n%s", out)
	press(m, "w", "w")
	must(t, len(ids(m)) == all, "w cycles back to every workspace")

	one := newFakeEngine(fixtureSnapshot())
	m1 := syncModel(t, one, testOptions(), 140, 30)
	must(t, !strings.Contains(plain(m1), "WORKSPACE"), "WORKSPACE column with one workspace")
}

func TestClientsViewPutsTheCulpritFirst(t *testing.T) {
	m := syncModel(t, newFakeEngine(fleetSnapshot()), testOptions(), 100, 24)
	press(m, "tab", "tab", "tab")
	out := plain(m)
	must(t, strings.Contains(out, "[Clients]"), "not on the Clients view:\n%s", out)
	must(t, strings.Contains(out, "Databricks JDBC 2.6.36 — 14 orphans, 2 leaks (user etl@corp, 20 statements)"), "culprit line:\n%s", out)
	lines := strings.Split(out, "\n")
	var jdbc, dbt int
	for i, l := range lines {
		if strings.Contains(l, "etl@corp") && strings.Contains(l, "14") {
			jdbc = i
		}
		if strings.Contains(l, "ann@corp") {
			dbt = i
		}
	}
	must(t, jdbc > 0 && dbt > jdbc, "rows not sorted by orphans:\n%s", out)
	must(t, strings.Contains(out, "7m10s"), "p95 missing:\n%s", out)
}

// TestConfigUIDefaults: the config file's view, sort and columns.
func TestConfigUIDefaults(t *testing.T) {
	o := testOptions()
	o.View, o.Sort, o.Columns = "clients", "age", []string{"flag", "statement", "state", "sql"}
	m := syncModel(t, newFakeEngine(fleetSnapshot()), o, 120, 30)
	must(t, strings.Contains(plain(m), "[Clients]"), "did not open on the Clients view:\n%s", plain(m))
	press(m, "tab", "tab", "tab") // Warehouses, Help, Operations
	out := plain(m)
	must(t, strings.Contains(out, "[Operations]") && strings.Contains(out, "sort age"), "sort age not applied:\n%s", out)
	must(t, !strings.Contains(out, "USER") && !strings.Contains(out, "RETRY") && strings.Contains(out, "STATEMENT"), "columns not applied:\n%s", out)
}
