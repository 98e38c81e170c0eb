package model

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestAggregateClientsFindsTheCulprit(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	op := func(app, user string, state State, startAgo, dur time.Duration, flags ...FlagKind) *OperationView {
		v := &OperationView{Operation: &Operation{ClientApplication: app, User: user, State: state, StartedAt: now.Add(-startAgo)}}
		if dur > 0 {
			v.CompletedAt = v.StartedAt.Add(dur)
		}
		for _, k := range flags {
			v.Flags = append(v.Flags, Flag{Kind: k, Severity: SeverityWarning})
		}
		return v
	}
	jdbc := "Databricks JDBC 2.6.36"
	ops := []*OperationView{
		op("go-sql 1.14", "ann", StateFinished, time.Minute, 2*time.Second),
		op("go-sql 1.14", "ann", StateFinished, time.Minute, 4*time.Second),
		op("go-sql 1.14", "ann", StateCanceled, time.Minute, time.Second),
		op(jdbc, "bob", StateFailed, 10*time.Minute, 430*time.Second, FlagReaped),
		op(jdbc, "bob", StateRunning, 5*time.Minute, 0, FlagInactive),
		op(jdbc, "bob", StateFinished, 5*time.Minute, time.Second, FlagUnclosed, FlagCloseFailed),
		op(jdbc, "bob", StateFailed, 2*time.Hour, time.Second, FlagReaped), // outside the window
		op("", "carl", StateRunning, time.Minute, 0),
	}
	got := AggregateClients(ops, now, time.Hour)
	if len(got) != 3 {
		t.Fatalf("rows: %+v", got)
	}
	c := got[0]
	if c.ClientApplication != jdbc || c.User != "bob" || c.Statements != 3 || c.Orphans != 2 || c.Leaks != 1 || c.Cancellations != 0 {
		t.Fatalf("culprit first: %+v", c)
	}
	if c.P95Duration == nil || *c.P95Duration != 430*time.Second {
		t.Fatalf("p95: %v", c.P95Duration)
	}
	if g := got[1]; g.ClientApplication != "go-sql 1.14" || g.Statements != 3 || g.Cancellations != 1 || *g.P95Duration != 4*time.Second {
		t.Fatalf("second: %+v", g)
	}
	if u := got[2]; u.ClientApplication != UnknownClient || u.P95Duration != nil {
		t.Fatalf("unknown client: %+v", u)
	}
	b, err := json.Marshal(got[2])
	if err != nil || !strings.Contains(string(b), `"p95_duration_s":null`) {
		t.Fatalf("json: %s %v", b, err)
	}
	var back ClientStats
	b, _ = json.Marshal(got[0])
	if err := json.Unmarshal(b, &back); err != nil || back.Orphans != 2 || *back.P95Duration != 430*time.Second {
		t.Fatalf("round trip: %s %+v %v", b, back, err)
	}
}

func TestMergeKeepsADownWorkspace(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := NamedSnapshot{Name: "a", Up: true, Snapshot: Snapshot{GeneratedAt: t0, Workspace: Workspace{Host: "http://a", Warehouses: []string{"w1"}},
		Operations: []*OperationView{{Operation: &Operation{StatementID: "1"}}, {Operation: &Operation{StatementID: "2"}, Flags: []Flag{{Kind: FlagReaped, Severity: SeverityWarning}}}},
		Endpoints:  []EndpointView{{Endpoint: Endpoint{Name: "e"}}}}}
	b := NamedSnapshot{Name: "b", Up: false, Snapshot: Snapshot{GeneratedAt: t0.Add(time.Second), Workspace: Workspace{Host: "http://b"},
		Errors: []ErrorInfo{{Kind: KindTransport, Call: "Discover", Message: "connection refused"}}}}
	m := Merge([]NamedSnapshot{a, b})
	if !m.GeneratedAt.Equal(t0.Add(time.Second)) || len(m.Operations) != 2 || len(m.Workspaces) != 2 {
		t.Fatalf("merge: %+v", m)
	}
	if m.Operations[0].StatementID != "2" || m.Operations[0].Workspace != "a" || m.Endpoints[0].Workspace != "a" {
		t.Fatalf("rows keep their workspace, most severe first: %+v", m.Operations)
	}
	if w := m.Workspaces[1]; w.Up || len(w.Errors) != 1 || w.Errors[0].Workspace != "b" || m.Errors[0].Workspace != "b" {
		t.Fatalf("down workspace: %+v", w)
	}
	if w := m.Workspaces[0]; !w.Up || w.Operations != 2 || w.Flagged != 1 || w.Endpoints != 1 {
		t.Fatalf("up workspace: %+v", w)
	}
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(js, &back); err != nil || len(back.Workspaces) != 2 || back.Operations[0].Workspace != "a" || back.Errors[0].Workspace != "b" {
		t.Fatalf("round trip: %v\n%s", err, js)
	}
}

// Merged warehouse listings add up, as of the oldest, and are unknown as
// soon as one workspace's is: it may hold any number of warehouses.
func TestMergeAddsWarehouseListings(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	part := func(name string, l *WarehouseListing) NamedSnapshot {
		return NamedSnapshot{Name: name, Up: true, Snapshot: Snapshot{Workspace: Workspace{Listing: l}}}
	}
	m := Merge([]NamedSnapshot{part("a", &WarehouseListing{At: t0.Add(time.Second), Visible: 2}), part("b", &WarehouseListing{At: t0, Visible: 3, Matched: 1})})
	if l := m.Workspace.Listing; l == nil || l.Visible != 5 || l.Matched != 1 || !l.At.Equal(t0) {
		t.Fatalf("merged listing %+v", l)
	}
	if l := Merge([]NamedSnapshot{part("a", &WarehouseListing{At: t0}), part("b", nil)}).Workspace.Listing; l != nil {
		t.Fatalf("merged listing %+v with one workspace unlisted", l)
	}
}
