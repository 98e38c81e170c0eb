package e2e

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// The in-process harness: a simulated workspace and dbxtop's engine built
// exactly as cmd/wire.go's runWorkspaceTUI builds it (REST discovery and
// capacity, Thrift status with the REST fallback, Thrift actions on the
// simulator), minus the TUI. Used by the fault matrix and the load test.

// longRun reports whether the long variants were asked for (DBXTOP_LONG=1).
func longRun() bool { return os.Getenv("DBXTOP_LONG") == "1" }

// leakOpts are the goroutines goleak must not count: opencensus (pulled in
// by databricks-sdk-go) starts its worker in an init function.
var leakOpts = []goleak.Option{goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start")}

// callCounter counts dbxtop's own calls by what the engine asked its
// sources for: one source call is one HTTP request, except discovery,
// which may read several pages (counted once; during an outage its first
// page fails, so it is exactly one request then).
type callCounter struct {
	status, discover, capacity, actions atomic.Int64
}

func (c *callCounter) total() int64 {
	return c.status.Load() + c.discover.Load() + c.capacity.Load() + c.actions.Load()
}

type countingStatus struct {
	sources.StatusSource
	n   *atomic.Int64
	log *pollLog // nil: not recorded (the load test)
}

func (s countingStatus) Status(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	s.n.Add(1)
	sent := time.Now()
	st, err := s.StatusSource.Status(ctx, ref)
	if err == nil && s.log != nil {
		s.log.add(ref.StatementID, okPoll{sent: sent, at: time.Now(), activity: st.ClientLastActivity, state: st.State, open: st.Open})
	}
	return st, err
}

// pollLog keeps when each status poll of each operation succeeded: what
// dbxtop could know, and when (the fault matrix judges flags by it).
type pollLog struct {
	mu sync.Mutex
	ok map[string][]okPoll
}

// okPoll is one successful status poll: when it was sent and returned,
// and what it reported (activity nil: the source could not tell).
type okPoll struct {
	sent, at time.Time
	activity *time.Time
	state    model.State
	open     *bool
}

func (l *pollLog) add(id string, p okPoll) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ok[id] = append(l.ok[id], p)
}

// lastOK is the last successful poll of id at or before t.
func (l *pollLog) lastOK(id string, t time.Time) (okPoll, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out okPoll
	for _, p := range l.ok[id] {
		if p.at.After(t) {
			break
		}
		out = p
	}
	return out, !out.at.IsZero()
}

type countingDiscoverer struct {
	sources.Discoverer
	n *atomic.Int64
}

func (d countingDiscoverer) Discover(ctx context.Context, retry sources.Retry) ([]sources.Discovered, error) {
	d.n.Add(1)
	return d.Discoverer.Discover(ctx, retry)
}

type countingCapacity struct {
	sources.CapacitySource
	n *atomic.Int64
}

func (c countingCapacity) Endpoints(ctx context.Context, retry sources.Retry) ([]model.Endpoint, error) {
	c.n.Add(1)
	return c.CapacitySource.Endpoints(ctx, retry)
}

type countingActions struct {
	sources.ActionSource
	n *atomic.Int64
}

func (a countingActions) Close(ctx context.Context, ref sources.Ref) error {
	a.n.Add(1)
	return a.ActionSource.Close(ctx, ref)
}

func (a countingActions) Cancel(ctx context.Context, ref sources.Ref) error {
	a.n.Add(1)
	return a.ActionSource.Cancel(ctx, ref)
}

// rigOptions configures one harness run; zero values are useful.
type rigOptions struct {
	Thresholds  model.Thresholds // zero → model defaults
	Refresh     time.Duration    // zero → the engine's 5 s
	MaxPages    int              // query-history pages per listing; 0 → the client's default
	RecordPolls bool             // keep every successful poll's time (rig.polls)
	// CountEvents keeps only a count per kind (the load test: tens of
	// thousands of give-ups in an outage must not weigh on the heap it
	// measures).
	CountEvents bool
}

// rig is one engine following one workspace URL. The simulator behind
// the URL may be replaced (a restart): the clients keep the URL.
type rig struct {
	t      testing.TB
	eng    *poller.Engine
	rests  []*databricks.Client
	tc     *thrift.Client
	calls  *callCounter
	polls  *pollLog
	cancel context.CancelFunc
	done   chan struct{}

	evMu     sync.Mutex
	events   []model.Event
	countEv  bool
	evCounts map[model.EventKind]int
	evStop   chan struct{}
	evDone   chan struct{}
}

// startRig builds the engine against host/token and starts Run and an
// event collector. Stop it with stop (also registered as Cleanup).
func startRig(t testing.TB, host, token string, o rigOptions) *rig {
	t.Helper()
	ctx := context.Background()
	ua := "dbxtop/e2e"
	// One REST client for every role, as cmd/wire.go builds it: its
	// warehouse gate, fed by discovery, decides where status polls and
	// actions go (TestRESTHostNoRace keeps the shared client race-free).
	disc, err := databricks.New(ctx, databricks.Config{
		Host: host, Token: token, UserAgent: ua, MaxPages: o.MaxPages,
	})
	if err != nil {
		t.Fatalf("databricks.New(%s): %v", host, err)
	}
	capa, fallback := disc, disc
	tc, err := thrift.NewClient(thrift.Options{
		Host: disc.Host(), Authenticate: disc.Authenticate, UserAgent: ua,
	})
	if err != nil {
		t.Fatalf("thrift.NewClient: %v", err)
	}
	calls := &callCounter{}
	var polls *pollLog
	if o.RecordPolls {
		polls = &pollLog{ok: map[string][]okPoll{}}
	}
	opts := poller.Options{
		Discoverer: countingDiscoverer{disc, &calls.discover},
		Status:     countingStatus{databricks.StatusWithFallback(tc, fallback), &calls.status, polls},
		// As in cmd/wire.go for a simulated workspace: Thrift actions,
		// only to running warehouses.
		Actions:    countingActions{databricks.GatedActions(tc, disc), &calls.actions},
		Capacity:   countingCapacity{capa, &calls.capacity},
		Settle:     disc,
		Thresholds: o.Thresholds,
		Refresh:    o.Refresh,
		Workspace:  model.Workspace{Host: disc.Host()},
		Idle:       []sources.IdleCloser{disc, tc},
	}
	r := &rig{t: t, eng: poller.NewEngine(opts), rests: []*databricks.Client{disc}, tc: tc, calls: calls, polls: polls,
		done: make(chan struct{}), evStop: make(chan struct{}), evDone: make(chan struct{}),
		countEv: o.CountEvents, evCounts: map[model.EventKind]int{}}
	runCtx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go func() {
		defer close(r.done)
		if err := r.eng.Run(runCtx); err != nil {
			t.Errorf("engine Run returned %v; want nil", err)
		}
	}()
	go r.collect()
	t.Cleanup(r.stop)
	return r
}

// collect keeps every event: the engine drops the oldest when its buffer
// is full, and the matrix needs all flag and give-up events.
func (r *rig) collect() {
	defer close(r.evDone)
	keep := func(ev model.Event) {
		r.evMu.Lock()
		defer r.evMu.Unlock()
		r.evCounts[ev.Kind]++
		if !r.countEv {
			r.events = append(r.events, ev)
		}
	}
	for {
		select {
		case ev := <-r.eng.Events():
			keep(ev)
		case <-r.evStop:
			// Run has returned: take what is left and stop.
			for {
				select {
				case ev := <-r.eng.Events():
					keep(ev)
				default:
					return
				}
			}
		}
	}
}

// eventCount is how many events of kind were collected so far.
func (r *rig) eventCount(kind model.EventKind) int {
	r.evMu.Lock()
	defer r.evMu.Unlock()
	return r.evCounts[kind]
}

// stop ends Run (which waits for its goroutines), then the collector and
// the clients' pooled connections. Idempotent.
func (r *rig) stop() {
	select {
	case <-r.evDone:
		return
	default:
	}
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("engine Run did not return within 30s of cancel")
	}
	close(r.evStop)
	<-r.evDone
	for _, c := range r.rests {
		c.CloseIdleConnections()
	}
	r.tc.CloseIdleConnections()
}

// eventsCopy returns the events collected so far.
func (r *rig) eventsCopy() []model.Event {
	r.evMu.Lock()
	defer r.evMu.Unlock()
	return append([]model.Event(nil), r.events...)
}

// startSimServer starts an in-process simulator; Cleanup closes it.
func startSimServer(t testing.TB, o sim.Options) *sim.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := sim.Start(ctx, o)
	if err != nil {
		t.Fatalf("sim.Start: %v", err)
	}
	t.Cleanup(func() { closeSim(t, s) })
	return s
}

// closeSim closes s (idempotent as far as the tests need: Close twice is
// avoided by the callers tracking which server is current).
func closeSim(t testing.TB, s *sim.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Close(ctx)
}

// sumRequests totals a simulator's request counters.
func sumRequests(st sim.Stats) int64 {
	var n int64
	for _, v := range st.Requests {
		n += v
	}
	return n
}

// sumFaults totals a simulator's injected faults.
func sumFaults(st sim.Stats) int64 {
	var n int64
	for _, v := range st.Faults {
		n += v
	}
	return n
}
