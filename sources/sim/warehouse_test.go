package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
)

func TestWarehouseStartedByThriftCountedByWho(t *testing.T) {
	clk := NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	s := startSim(t, Options{StoppedWarehouses: 2, Clock: clk, StartDelay: 10 * time.Second, AutoStop: -1})
	stopped := s.StoppedWarehouseIDs()
	if len(stopped) != 2 || len(s.WarehouseIDs()) != 3 || len(s.AllWarehouseIDs()) != 5 {
		t.Fatalf("warehouses: running %v stopped %v all %v", s.WarehouseIDs(), stopped, s.AllWarehouseIDs())
	}
	for _, id := range stopped {
		if st := s.WarehouseState(id); st != WarehouseStopped {
			t.Fatalf("spare %s is %s, want STOPPED", id, st)
		}
	}
	ctx := context.Background()

	// An observer's Thrift call starts the first one: counted, and
	// answered 503 with a Retry-After while it starts.
	obs := thriftClient(t, s, "dbxtop/test")
	_, err := obs.OpenSession(ctx, stopped[0])
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 503 || he.ErrorCode != "TEMPORARILY_UNAVAILABLE" || !he.HasRetryAfter {
		t.Fatalf("OpenSession on a stopped warehouse: %v, want 503 TEMPORARILY_UNAVAILABLE with Retry-After", err)
	}
	if st := s.WarehouseState(stopped[0]); st != WarehouseStarting {
		t.Fatalf("after the call: %s, want STARTING", st)
	}
	// A client's call starts the second; the proxy counts as an observer.
	if _, err := thriftClient(t, s, "databricks-sql-go/1.14.0").OpenSession(ctx, stopped[1]); err == nil {
		t.Fatal("a starting warehouse served a session")
	}
	if _, err := thriftClient(t, s, "dbxtop-proxy/0.1").OpenSession(ctx, stopped[0]); err == nil {
		t.Fatal("a starting warehouse served a session")
	}
	st := getStats(t, s).WarehouseStarts
	if st.Observer != 1 || st.Clients != 1 {
		t.Fatalf("warehouse_starts %+v, want observer 1 clients 1 (a call to a STARTING warehouse is no new start)", st)
	}
	clk.Advance(10 * time.Second)
	if st := s.WarehouseState(stopped[0]); st != WarehouseRunning {
		t.Fatalf("after StartDelay: %s, want RUNNING", st)
	}
	if _, err := obs.OpenSession(ctx, stopped[0]); err != nil {
		t.Fatalf("running warehouse: %v", err)
	}
}

func TestWarehouseAutoStopsWhenIdle(t *testing.T) {
	clk := NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	s := startSim(t, Options{Clock: clk, AutoStop: time.Minute, ReapEvery: time.Hour})
	ids := s.WarehouseIDs()
	ctx := context.Background()
	c := thriftClient(t, s, "databricks-sql-go/1.14.0")
	sess, err := c.OpenSession(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(ctx, sess, "SELECT sleep(300)", false); err != nil {
		t.Fatal(err)
	}
	// The observer polls: not activity.
	obs := thriftClient(t, s, "dbxtop/test")
	clk.Advance(50 * time.Second)
	if _, err := obs.OpenSession(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Second)
	s.autoStop() // the reaper's tick, run here so the test owns the order
	if st := s.WarehouseState(ids[1]); st != WarehouseStopped {
		t.Fatalf("idle warehouse after 70s (AutoStop 1m): %s", st)
	}
	// A live operation keeps its warehouse running; an observer's polls
	// do not count as activity.
	if st := s.WarehouseState(ids[0]); st != WarehouseRunning {
		t.Fatalf("warehouse with a running statement: %s", st)
	}
	if n := getStats(t, s).WarehouseStarts; n.Observer != 0 || n.Clients != 0 {
		t.Fatalf("starts %+v", n)
	}
}

func TestDemoHasAStoppedWarehouseWithHistory(t *testing.T) {
	s := startSim(t, Options{Scenario: ScenarioDemo, Speed: 6})
	ids := s.StoppedWarehouseIDs()
	if len(ids) != 1 || s.WarehouseState(ids[0]) != WarehouseStopped {
		t.Fatalf("demo stopped warehouses %v", ids)
	}
	n := 0
	for _, op := range getTruth(t, s).Operations {
		if op.WarehouseID == ids[0] {
			n++
			if op.Open || op.State != "CLOSED" {
				t.Errorf("history on the stopped warehouse: %+v", op)
			}
		}
	}
	if n == 0 {
		t.Fatal("no history on the stopped warehouse")
	}
	// And query history lists them (within any discovery window).
	rows, _ := s.store.history(&historyQuery{warehouses: ids, max: 100}, 0)
	if len(rows) != n {
		t.Fatalf("query history lists %d of the %d statements on the stopped warehouse", len(rows), n)
	}
}
