package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// dbxtop never starts a warehouse. The demo has one STOPPED warehouse with
// statements in query history (within the discovery window); the TUI's
// engine, `snapshot` and `snapshot --watch` all follow the workspace, and
// the simulator — which starts a stopped warehouse on any Thrift request
// and counts who caused it — must count no start by an observer. The
// statements on the stopped warehouse are followed all the same through
// workspace-level REST — the Statement Execution API, which by default
// knows no Thrift-run statement, then query history — with the reason on
// the row.
func TestNoObserverStartsAWarehouse(t *testing.T) {
	budget(t)
	s := startSimServer(t, sim.Options{Scenario: sim.ScenarioDemo, Speed: 6})
	stopped := s.StoppedWarehouseIDs()
	if len(stopped) != 1 {
		t.Fatalf("the demo has %d stopped warehouses, want 1", len(stopped))
	}
	onStopped := map[string]bool{}
	for _, op := range s.Truth().Operations {
		if op.WarehouseID == stopped[0] {
			onStopped[op.StatementID] = true
		}
	}
	if len(onStopped) == 0 {
		t.Fatal("no history on the stopped warehouse: the test would prove nothing")
	}

	// The TUI's engine (as cmd/wire.go builds it), until it has followed
	// and settled every statement of the stopped warehouse.
	r := startRig(t, s.URL(), s.Token(), rigOptions{Refresh: 500 * time.Millisecond})
	deadline := time.Now().Add(30 * time.Second)
	for {
		done := 0
		for _, op := range r.eng.Snapshot().Operations {
			if onStopped[op.StatementID] && op.StatusSource == model.StatusViaHistory &&
				strings.Contains(op.StatusNote, "is STOPPED; Thrift would start it") &&
				strings.Contains(op.StatusNote, "Statement Execution API does not know it") {
				done++
			}
		}
		if done == len(onStopped) && r.eventCount("discovered") > 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, op := range r.eng.Snapshot().Operations {
				if onStopped[op.StatementID] {
					t.Logf("%s: state %s source %q note %q last_poll_ok %v err %v", op.StatementID, op.State, op.StatusSource, op.StatusNote, op.LastPollOKAt, op.LastError)
				}
			}
			t.Fatalf("the engine did not follow the stopped warehouse's %d statements through workspace-level REST within 30s", len(onStopped))
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.stop()

	env := []string{"DATABRICKS_TOKEN=" + s.Token()}
	one := run(t, runOpts{args: []string{"snapshot", "--json", "--host", s.URL()}, env: env})
	if one.code == 3 {
		t.Fatalf("snapshot could not observe: %s", one)
	}
	var snap model.Snapshot
	if err := json.Unmarshal([]byte(one.stdout), &snap); err != nil {
		t.Fatalf("snapshot JSON: %v\n%s", err, one)
	}
	seen := 0
	for _, op := range snap.Operations {
		if onStopped[op.StatementID] {
			seen++
			// Confirmed without Thrift: by query history (batch) or by the
			// Statement Execution API, which then says why.
			if op.StatusSource == model.StatusViaThrift || op.StatusSource == "" ||
				(op.StatusSource == model.StatusViaStatementAPI && op.StatusNote == "") {
				t.Errorf("snapshot row of %s on the stopped warehouse: status_source %q, note %q", op.StatementID, op.StatusSource, op.StatusNote)
			}
		}
	}
	if seen == 0 {
		t.Errorf("snapshot did not list the stopped warehouse's statements")
	}
	watch := run(t, runOpts{args: []string{"snapshot", "--watch", "--interval", "200ms", "--count", "3", "--host", s.URL()}, env: env})
	if watch.code == 3 || len(lines(watch.stdout)) != 3 {
		t.Fatalf("snapshot --watch: %s", watch)
	}

	st := s.Stats().WarehouseStarts
	if st.Observer != 0 {
		t.Fatalf("dbxtop started a warehouse: warehouse_starts %+v", st)
	}
	if got := s.WarehouseState(stopped[0]); got != sim.WarehouseStopped {
		t.Fatalf("the stopped warehouse is %s", got)
	}

	// The counter works: one observer Thrift call does start it.
	c, err := thrift.NewClient(thrift.Options{Host: s.URL(), Token: s.Token(), UserAgent: "dbxtop/e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	_, _ = c.OpenSession(context.Background(), stopped[0])
	if st := s.Stats().WarehouseStarts; st.Observer != 1 {
		t.Fatalf("control: an observer's Thrift call must count one start, got %+v", st)
	}
}

// Discovery under a 50 % throttle of ListQueries (429 with Retry-After: 1)
// retries each page on its own: `snapshot` with the default --timeout must
// observe (exit ≤ 2) for every seed from 1 to 50 of the demo scenario. The
// simulators run in this process (fast); the snapshots are the binary.
func TestThrottledDiscoveryNeverUnknown(t *testing.T) {
	budget(t)
	const seeds = 50
	type outcome struct {
		seed int
		r    result
		st   sim.Stats
	}
	out := make([]outcome, seeds)
	sem := make(chan struct{}, 10)
	var wg sync.WaitGroup
	for i := range seeds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			seed := i + 1
			s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioDemo, Seed: int64(seed), Faults: "throttle=0.5@ListQueries"})
			if err != nil {
				t.Errorf("seed %d: sim.Start: %v", seed, err)
				return
			}
			defer closeSim(t, s)
			r := run(t, runOpts{args: []string{"snapshot", "--host", s.URL()}, env: []string{"DATABRICKS_TOKEN=" + s.Token()}, timeout: 60 * time.Second})
			out[i] = outcome{seed: seed, r: r, st: s.Stats()}
		}()
	}
	wg.Wait()
	var bad []string
	throttled := int64(0)
	for _, o := range out {
		throttled += o.st.Faults[sim.FaultThrottle]
		if o.r.code > 2 {
			bad = append(bad, fmt.Sprintf("seed %d: %s", o.seed, o.r))
		}
		if o.st.WarehouseStarts.Observer != 0 {
			bad = append(bad, fmt.Sprintf("seed %d: observer started a warehouse", o.seed))
		}
	}
	t.Logf("%d seeds, %d ListQueries answers throttled, %d failures", seeds, throttled, len(bad))
	if throttled < seeds {
		t.Errorf("only %d throttled answers over %d seeds: the fault did not apply", throttled, seeds)
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d seeds:\n%s", len(bad), seeds, strings.Join(bad, "\n"))
	}
}
