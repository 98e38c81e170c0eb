package poller

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// Call names the engine uses for its own calls (the names the simulator's
// fault injection and the Events view know).
const (
	CallDiscover = "Discover"
	CallStatus   = "GetOperationStatus"
	CallClose    = "CloseOperation"
	CallCancel   = "CancelOperation"
	CallCapacity = "ListEndpoints"
	CallProbe    = "UpsertDataVectorIndex"
)

// How long a closed or vanished operation stays in the snapshot.
const retainFor = 5 * time.Minute

// ErrReadOnly is returned by every mutating action in read-only mode.
var ErrReadOnly = errors.New("read-only mode: dbxtop refuses to change anything on the server")

// ErrUnknownOperation is returned for an action on an id the engine does
// not follow.
var ErrUnknownOperation = errors.New("dbxtop does not follow this operation")

// ErrNoActions is returned when no sources.ActionSource was configured.
var ErrNoActions = errors.New("this workspace source cannot cancel or close operations")

// Options configures an Engine; see the field comments for defaults.
type Options struct {
	Discoverer sources.Discoverer     // required
	Status     sources.StatusSource   // required
	Actions    sources.ActionSource   // nil → every action refused with ErrNoActions
	Capacity   sources.CapacitySource // nil → no endpoints
	Settle     Settler                // final state of a gone operation; nil → UNKNOWN unless already final
	Probe      bool                   // --capacity-probe: one empty upsert per endpoint per refresh
	// RowLimits are the config file's per-endpoint row limits (by name).
	RowLimits map[string]int64
	// Learned keeps the limits learned from RESOURCE_EXHAUSTED (capstore);
	// nil keeps them in memory for the engine's life.
	Learned    LearnedLimits
	Thresholds model.Thresholds
	Refresh    time.Duration // discovery + capacity period; 0 → model.DefaultRefresh
	ReadOnly   bool          // refuse Adopt/Close/Cancel with ErrReadOnly
	Workspace  model.Workspace
	// Warehouses, when set, is read after each successful discovery: the
	// snapshot's Workspace.Listing says how many warehouses were listed,
	// which explains an empty Operations view (nil: not said).
	Warehouses sources.WarehouseLister
	// Proxies, when set, is read for each snapshot: how each dbxtop proxy
	// fared (Workspace.Proxies).
	Proxies sources.ProxyLister
	// MaxInFlight is the ceiling of calls in flight (per-operation polls
	// and batch requests); 0 → 64. Below it the limiter sizes concurrency
	// from latency and demand (limit.go).
	MaxInFlight int
	// Batch, when set, confirms live operations in batches (query history
	// by statement ids) every BatchEvery (0 → 1 s); per-operation polls
	// are then kept for what only they tell (batch.go). Discovery listings
	// count as confirmations too: with Batch set, the sources.Discoverer is
	// assumed to read the same query history.
	Batch      sources.BatchStatusSource
	BatchEvery time.Duration
	// FinishedEvery is how often discovery lists recently ended
	// statements (UNCLOSED and REAPED candidates) when its source can
	// narrow a discovery (sources.ScopedDiscoverer): they matter from
	// LeakAfter after their end, so 0 → a quarter of LeakAfter; < 0 →
	// every discovery.
	FinishedEvery time.Duration
	// finishedRows is the rows per second a full discovery may read on
	// average (0 → finishedRowsPerSecond; tests lower it).
	finishedRows int
	// maxEnded bounds the ended operations followed (0 → MaxEnded, < 0:
	// none; tests lower it).
	maxEnded int
	Clock    retry.Clock
	Policy   retry.PolicyOptions  // zero value = documented defaults
	Idle     []sources.IdleCloser // transports to drop idle connections of on transport errors
	// Logger receives the engine's log (nil: none): WARN for give-ups
	// and refused connections, ERROR when discovery fails (the workspace
	// is no longer observed), INFO for the rest, with call, attempt,
	// operation and workspace as attributes. Messages are redacted.
	Logger *slog.Logger
	// ClientsWindow is how far back the snapshot's clients[] aggregates
	// (--window); 0 → model.DefaultWindow.
	ClientsWindow time.Duration
}

// Health is model.Health: the poller's own state for the TUI header.
type Health = model.Health

// Engine follows a workspace's operations and endpoints. It runs the
// loop and the rounds, and holds, under mu, the scheduler (when each
// operation is polled, and how many calls are in flight) and the
// discovery, batch and capacity rounds' own state. What it believes
// about each operation is the ledger's, which has its own lock.
type Engine struct {
	o   Options
	clk retry.Clock
	pol *retry.Policy
	out *emitter
	// loop wakes the run loop; it is not under mu.
	loop loop

	mu    sync.Mutex
	book  ledger        // what it believes: operations, views, the close queue (own lock)
	sched scheduler     // when each is polled, and how many calls are in flight
	disc  discovery     // the discovery rounds' own state
	batch batchState    // the batch rounds' own state
	caps  capacityState // the capacity rounds' own state
	hs    engineAccount // the engine's own account: errors, rounds, polls, freshness
}

// NewEngine builds an engine; nothing runs until Run or RunOnce.
func NewEngine(o Options) *Engine {
	if o.Refresh <= 0 {
		o.Refresh = model.DefaultRefresh
	}
	if o.ClientsWindow <= 0 {
		o.ClientsWindow = model.DefaultWindow
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.BatchEvery <= 0 {
		o.BatchEvery = defaultBatchEvery
	}
	if o.Thresholds == (model.Thresholds{}) {
		o.Thresholds = model.DefaultThresholds
	}
	if o.FinishedEvery == 0 {
		o.FinishedEvery = o.Thresholds.WithDefaults().LeakAfter / 4
	}
	e := &Engine{
		o:     o,
		clk:   retry.ClockOr(o.Clock),
		out:   newEmitter(),
		book:  newLedger(o.Thresholds, o.maxEnded),
		hs:    engineAccount{wsErrs: map[string]model.ErrorInfo{}},
		caps:  capacityState{mem: memLearned{}},
		sched: scheduler{lim: newLimiter(o.MaxInFlight)},
	}
	e.loop.wake = make(chan struct{}, 1)
	po := o.Policy
	if po.Clock == nil {
		po.Clock = e.clk
	}
	po.Idle = append(append([]sources.IdleCloser(nil), po.Idle...), o.Idle...)
	userObs := po.Observe
	po.Observe = func(r retry.Report) {
		e.observe(r)
		if userObs != nil {
			userObs(r)
		}
	}
	e.pol = retry.NewPolicy(po)
	return e
}

// Events is the engine's event stream. It is buffered and the engine never
// blocks on it: when full, the oldest event is dropped and counted.
func (e *Engine) Events() <-chan model.Event { return e.out.ch }

// ReadOnly reports whether mutating actions are refused.
func (e *Engine) ReadOnly() bool { return e.o.ReadOnly }

// Policy returns the engine's retry policy (shared by all its calls).
func (e *Engine) Policy() *retry.Policy { return e.pol }

// Run follows the workspace until ctx is done, then cancels in-flight
// calls, waits for every goroutine it started and returns nil. Each turn
// starts what is due (turn) and parks until the next due time or a
// signal from a goroutine that finished or changed the schedule.
func (e *Engine) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	spawn := func(fn func(context.Context)) {
		wg.Add(1)
		e.loop.started()
		go func() {
			defer wg.Done()
			fn(ctx)
			e.loop.stopped()
		}()
	}
	now := e.clk.Now()
	t := timers{flags: now, batch: now}
	for {
		gen := e.loop.sigGen.Load()
		now := e.clk.Now()
		next := e.turn(now, &t, spawn)
		timer := e.clk.After(next.Sub(now))
		// Recorded after After, so never earlier than the timer.
		e.loop.park(gen, e.clk.Now().Add(next.Sub(now)))
		select {
		case <-ctx.Done():
			e.loop.unpark()
			cancel()
			wg.Wait()
			return nil
		case <-timer:
		case <-e.wake():
		}
		e.loop.unpark()
	}
}

func (e *Engine) wake() <-chan struct{} { return e.loop.wake }

// Refresh is the discovery and capacity period in force: --refresh, or
// what SetRefresh set since.
func (e *Engine) Refresh() time.Duration {
	if d := e.loop.refresh.Load(); d > 0 {
		return time.Duration(d)
	}
	return e.o.Refresh
}

// SetRefresh changes the discovery and capacity period at run time (the
// TUI's + and -), no shorter than model.MinRefresh; the next round is
// due one new period after the last one began.
func (e *Engine) SetRefresh(d time.Duration) {
	e.loop.refresh.Store(int64(max(d, model.MinRefresh)))
	e.loop.signal()
}

// timers are the run loop's periodic deadlines; refreshed is when the
// last discovery round began (its period may change at run time).
type timers struct{ refreshed, flags, batch time.Time }

// turn is one turn of the run loop: it starts the discovery and capacity
// rounds, the batch round, the batch requests and polls the in-flight
// limit allows, and the closes that are due, compares flags once a
// second, and returns when the loop must look again.
func (e *Engine) turn(now time.Time, t *timers, spawn func(func(context.Context))) time.Time {
	e.mu.Lock()
	period := e.Refresh()
	if t.refreshed.IsZero() || !now.Before(t.refreshed.Add(period)) {
		t.refreshed = now
		e.startRefresh(spawn)
	}
	next := t.refreshed.Add(period)
	if e.batchMode() {
		if !now.Before(t.batch) {
			t.batch = now.Add(e.batchPeriod())
			if e.batch.pending == 0 {
				e.startBatch(spawn)
			}
		}
		next = earliest(next, t.batch)
	}
	limit := e.sched.lim.limit(e.demand(), e.budgetShare())
	e.dispatch(now, limit, spawn)
	next = earliest(next, e.startCloses(now, spawn))
	if at := e.sched.heap.first(); !at.IsZero() && e.sched.inflight < limit {
		next = earliest(next, at) // perhaps a poll put off: popDue files it again
	}
	e.mu.Unlock()
	if !now.Before(t.flags) {
		e.evalFlags(true)
		t.flags = now.Add(time.Second)
	}
	return earliest(next, t.flags)
}

// earliest is the earlier of a and b; a zero b is no time.
func earliest(a, b time.Time) time.Time {
	if !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// startRefresh starts a discovery round and a capacity round, each
// unless one is still running (e.mu held).
func (e *Engine) startRefresh(spawn func(func(context.Context))) {
	if !e.disc.running {
		e.disc.running = true
		spawn(func(ctx context.Context) { _ = e.discoverRound(ctx) })
	}
	if e.o.Capacity != nil && !e.caps.running {
		e.caps.running = true
		spawn(e.capacityRound)
	}
}

// dispatch sends queued batch requests, then due polls, while fewer than
// limit calls are in flight (e.mu held).
func (e *Engine) dispatch(now time.Time, limit int, spawn func(func(context.Context))) {
	for e.sched.inflight < limit && len(e.batch.queue) > 0 {
		c := e.batch.queue[0]
		e.batch.queue = e.batch.queue[1:]
		e.sched.inflight++
		spawn(func(ctx context.Context) { e.confirmChunk(ctx, c) })
	}
	for e.sched.inflight < limit {
		en := e.sched.popDue(now)
		if en == nil {
			break
		}
		en.polling = true
		e.sched.inflight++
		spawn(func(ctx context.Context) { e.pollOne(ctx, en) })
	}
}

// startCloses starts the queued closes that are due and returns when the
// next one is (zero: none waits), e.mu held.
func (e *Engine) startCloses(now time.Time, spawn func(func(context.Context))) time.Time {
	due, next := e.book.closesDue(now)
	for _, en := range due {
		spawn(func(ctx context.Context) { e.closeRound(ctx, en) })
	}
	return next
}

// RunOnce observes once: one discovery, one status poll of each followed
// operation and one capacity round. It returns the discovery error, if
// any (the workspace could not be observed). Do not call it while Run runs.
func (e *Engine) RunOnce(ctx context.Context) error {
	e.mu.Lock()
	e.disc.running = true
	// The round starts before discovery: a state that discovery's listing
	// confirms (batch mode) is read in this round.
	e.hs.round++
	e.mu.Unlock()
	// A failed discovery still polls the operations already known.
	derr := e.discoverRound(ctx)
	e.mu.Lock()
	// What this round must read: every operation scheduled for polls.
	want := slices.Clone(e.sched.heap)
	e.mu.Unlock()
	var wg sync.WaitGroup
	if e.o.Capacity != nil {
		e.mu.Lock()
		e.caps.running = true
		e.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); e.capacityRound(ctx) }()
	}
	start := e.clk.Now()
	if !e.batchMode() {
		e.pollWhere(ctx, func(*entry) bool { return true })
	} else {
		// Probes and due openness polls first: they tell whether the
		// source reports client activity.
		e.pollWhere(ctx, func(en *entry) bool { return en.next <= stamp(start) })
		if e.batch.activity {
			e.pollWhere(ctx, func(*entry) bool { return true })
		} else {
			e.runBatch(ctx, e.o.MaxInFlight)
			// What no listing confirmed this round is asked one by one, and
			// so is the openness of what ended LeakAfter ago or more by a
			// listing's word (query history tells no openness): a one-shot
			// snapshot would otherwise never see such a leak.
			now := e.clk.Now()
			e.pollWhere(ctx, func(en *entry) bool {
				return (!en.op.State.Terminal() && en.op.LastPollOKAt.Before(start)) || e.opennessDue(en, now)
			})
		}
	}
	wg.Wait()
	e.mu.Lock()
	e.roundStatus(want, errCtx(ctx))
	e.mu.Unlock()
	// No freshness goal: it is the schedule's (Run). A round confirms
	// what it reads and names what it could not (roundStatus); how long
	// the round took (a throttled listing, a slow capacity call, a
	// loaded machine) is not staleness.
	e.evalFlags(false)
	return derr
}

// opennessDue: en ended LeakAfter ago or more, only query history has
// spoken about it (no per-operation answer, so its openness is unknown),
// and it is not dbxtop's own to close (e.mu held).
func (e *Engine) opennessDue(en *entry, now time.Time) bool {
	op := &en.op
	return en.terminal && op.State.Terminal() && !op.Gone && op.Open == nil && !op.Adopted && !en.queued &&
		op.StatusSource == model.StatusViaHistory && !unstamp(en.terminalAt).Add(e.o.Thresholds.LeakAfter).After(now)
}

// pollWhere polls, once each and within MaxInFlight, the scheduled
// operations that match (RunOnce).
func (e *Engine) pollWhere(ctx context.Context, match func(*entry) bool) {
	e.mu.Lock()
	var due []*entry
	for _, en := range slices.Clone(e.sched.heap) {
		if match(en) {
			e.sched.heap.remove(en) // its rate stays: the poll files it again
			en.polling = true
			e.sched.inflight++
			due = append(due, en)
		}
	}
	e.mu.Unlock()
	sem := make(chan struct{}, e.o.MaxInFlight)
	var wg sync.WaitGroup
	for _, en := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.pollOne(ctx, en)
			<-sem
		}()
	}
	wg.Wait()
}

// retire stops polling en; it stays in the snapshot for retainFor.
func (e *Engine) retire(en *entry, now time.Time) {
	e.sched.remove(en)
	e.book.retire(en, now)
}

// retireUnknown stops asking about en, whose openness no source could
// tell (belief.go).
func (e *Engine) retireUnknown(en *entry, now time.Time) {
	e.sched.remove(en)
	e.book.retireUnknown(en, now)
}

// log writes one record with the engine's workspace attribute; the
// message is redacted (it may quote a server's answer).
func (e *Engine) log(level slog.Level, msg string, attrs ...slog.Attr) {
	l := e.o.Logger
	if l == nil || !l.Enabled(context.Background(), level) {
		return
	}
	if ws := e.o.Workspace.Host; ws != "" {
		attrs = append(attrs, slog.String("workspace", ws))
	}
	l.LogAttrs(context.Background(), level, sources.Redact(msg), attrs...)
}

// settled reports (for tests with a fake clock) that nothing can happen
// until the clock moves: the loop is parked with nothing due and every
// busy goroutine waits out a backoff that ends in the future.
func (e *Engine) settled() bool {
	now := e.clk.Now()
	n, allAfter := e.pol.SleepingUntil(now)
	return e.loop.settled(now, n, allAfter)
}
