package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
	dbxthrift "github.com/dbxtop/dbxtop/sources/thrift"
)

// dbxtop's own stack as the third contender of issue 9 item 2: an
// application submits the statements with one ExecuteStatement each
// (sources/thrift, one session per statement, sessions left open like a
// warm pool) and hands them to dbxtop, which discovers them from query
// history (sources/databricks), follows them with the poller engine over
// sources/thrift and, because they are adopted, closes each one once it is
// terminal. The engine runs with its product defaults.
func runOrphansDbxtop(t *testing.T, sc orphanScenario, n, secs int) orphanResult {
	t.Helper()
	// Lenient handles: dbxtop follows and closes these operations through
	// handles rebuilt from statement ids, not through the proxy, which
	// would hold the real handles on a strict server.
	s := startSimOpts(t, sim.Options{Faults: sc.faults, Warehouses: 1, LenientHandles: true})
	wh := firstWarehouse(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	tc, err := dbxthrift.NewClient(dbxthrift.Options{Host: s.URL(), Token: s.Token(), Transport: &http.Transport{MaxIdleConnsPerHost: 64}})
	if err != nil {
		t.Fatalf("thrift.NewClient: %v", err)
	}
	defer tc.CloseIdleConnections()
	rc, err := databricks.New(ctx, databricks.Config{Host: s.URL(), Token: s.Token(), Warehouses: []string{wh}, Transport: &http.Transport{}})
	if err != nil {
		t.Fatalf("databricks.New: %v", err)
	}
	defer rc.CloseIdleConnections()
	eng := poller.NewEngine(poller.Options{
		Discoverer: rc,
		Status:     tc,
		Actions:    tc,
		Workspace:  model.Workspace{Host: s.URL(), Warehouses: []string{wh}},
		Idle:       []sources.IdleCloser{tc, rc},
	})
	// Drain events so the engine never blocks or drops on our account.
	evDone := make(chan struct{})
	go func() {
		defer close(evDone)
		for {
			select {
			case <-eng.Events():
			case <-ctx.Done():
				return
			}
		}
	}()
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = eng.Run(ctx)
	}()

	base := getStats(t, s)
	start := time.Now()
	r := orphanResult{scenario: sc.name, contender: "dbxtop-engine", n: n, secs: secs}

	// Submit: one attempt each (ExecuteStatement is not safe to repeat).
	ids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := tc.OpenSession(ctx, wh)
			if err == nil {
				var op *dbxthrift.Operation
				op, err = tc.Execute(ctx, sess, fmt.Sprintf("SELECT sleep(%d)", secs), false)
				if err == nil {
					mu.Lock()
					ids[op.Ref.StatementID] = true
					mu.Unlock()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.failed++
				if r.firstErr == "" {
					r.firstErr = err.Error()
				}
			}
		}()
	}
	wg.Wait()
	r.handles = len(ids)
	r.ok = n - r.failed

	// The operator adopts everything dbxtop shows (the test is the
	// operator pressing `a`); followed records what the engine follows.
	followed := map[string]bool{}
	adoptAll := func() {
		for _, ov := range eng.Snapshot().Operations {
			followed[ov.StatementID] = true
			if !ov.Adopted {
				if err := eng.Adopt(ctx, ov.StatementID); err != nil && !errors.Is(err, poller.ErrUnknownOperation) {
					t.Errorf("Adopt(%s): %v", ov.StatementID, err)
				}
			}
		}
	}
	tr := waitFor(t, s, 30*time.Second, "every submitted statement followed by dbxtop", func(tr truth) bool {
		adoptAll()
		return countExternal(tr, func(o truthOp) bool { return !followed[o.StatementID] }) == 0
	})
	r.noHandle = countExternal(tr, func(o truthOp) bool { return !ids[o.StatementID] })

	if sc.outage > 0 {
		waitFor(t, s, 60*time.Second, fmt.Sprintf("%d statements RUNNING", r.handles), func(tr truth) bool {
			return countExternal(tr, func(o truthOp) bool { return o.State == "RUNNING" }) >= r.handles
		})
		setFaults(t, s, "unavailable=1")
		time.Sleep(sc.outage) // the outage length is the experiment's parameter
		setFaults(t, s, "")
	}

	// Every sleep ends on the server; dbxtop then closes each adopted
	// operation. Abandoned: on the server but never followed by dbxtop.
	tr = waitFor(t, s, time.Duration(secs)*time.Second+60*time.Second, "every sleep over", func(tr truth) bool {
		adoptAll()
		return countExternal(tr, func(o truthOp) bool { return !isTerminal(o.State) }) == 0
	})
	r.abandoned = countExternal(tr, func(o truthOp) bool { return !followed[o.StatementID] })
	// Give the close queue time to work through faults (its backoff), then
	// count what stays open. Waiting on the truth, not on a guess.
	deadline := time.Now().Add(60 * time.Second)
	for {
		adoptAll()
		tr = getTruth(t, s)
		r.leaked = countExternal(tr, func(o truthOp) bool { return isTerminal(o.State) && o.State != "CLOSED" && o.Open })
		if r.leaked == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	d := getStats(t, s).minus(base)
	r.requests = d.totalRequests()
	r.polls = d.Requests["GetOperationStatus"]
	r.faults = d.Faults
	r.elapsed = time.Since(start)
	setFaults(t, s, "")

	h := eng.Health()
	t.Logf("dbxtop engine health: followed=%d polls=%d retries=%d give_ups=%d budget=%.0f/%.0f last_error=%v",
		h.Followed, h.Polls, h.Retries, h.GiveUps, h.BudgetAvailable, h.BudgetCapacity, h.LastError)
	cancel()
	<-runDone
	<-evDone
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if open := eng.Shutdown(sctx); len(open) > 0 {
		t.Logf("dbxtop shutdown: %d closes still pending", len(open))
	}
	noSecret(t, s, "submit error", r.firstErr)
	return r
}

// TestDbxtopProbeExhausted: issue 9 item 1, dbxtop's side. The policy
// around sources/databricks' capacity probe returns a full endpoint's
// RESOURCE_EXHAUSTED after one upsert, with error_code and request_id in
// the error text.
func TestDbxtopProbeExhausted(t *testing.T) {
	t.Parallel()
	s, ep, _ := exhaustedIndex(t)
	r := dbxtopProbe(t, s, ep)
	t.Logf("DBXTOP probe of %s: %d upsert requests (%d in all), %s, error %q", ep, r.requests, r.all, r.elapsed.Round(time.Microsecond), r.err)
	if r.err == nil {
		t.Fatal("probe of a full endpoint succeeded")
	}
	if r.requests != 1 {
		t.Errorf("upsert requests = %d, want 1 (RESOURCE_EXHAUSTED is permanent)", r.requests)
	}
	var he *sources.HTTPError
	if !errors.As(r.err, &he) {
		t.Errorf("error %T does not reach a *sources.HTTPError", r.err)
	}
	msg := r.err.Error()
	if !strings.Contains(msg, "RESOURCE_EXHAUSTED") {
		t.Errorf("error text lacks the error_code: %q", msg)
	}
	if rid := requestIDOf(t, r.err); rid == "" || !strings.Contains(msg, rid) {
		t.Errorf("error text lacks the request_id %q: %q", rid, msg)
	}
	noSecret(t, s, "dbxtop error", msg)
}

type probeResult struct {
	requests, all int64
	elapsed       time.Duration
	err           error
}

func dbxtopProbe(t testing.TB, s *sim.Server, ep string) probeResult {
	t.Helper()
	ctx := context.Background()
	rc, err := databricks.New(ctx, databricks.Config{Host: s.URL(), Token: s.Token(), Transport: &http.Transport{}})
	if err != nil {
		t.Fatalf("databricks.New: %v", err)
	}
	defer rc.CloseIdleConnections()
	pol := retry.NewPolicy(retry.PolicyOptions{})
	base := getStats(t, s)
	start := time.Now()
	err = pol.Do(ctx, retry.Call{Name: poller.CallProbe}, func(ctx context.Context) error { return rc.Probe(ctx, ep) })
	r := probeResult{elapsed: time.Since(start), err: err}
	d := getStats(t, s).minus(base)
	r.requests = d.Requests["UpsertDataVectorIndex"]
	r.all = d.totalRequests()
	return r
}

func requestIDOf(t testing.TB, err error) string {
	t.Helper()
	var he *sources.HTTPError
	if errors.As(err, &he) {
		return he.RequestID
	}
	return ""
}
