package poller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	Clock        retry.Clock
	Policy       retry.PolicyOptions  // zero value = documented defaults
	Idle         []sources.IdleCloser // transports to drop idle connections of on transport errors
	Logf         func(format string, args ...any)
	// ClientsWindow is how far back the snapshot's clients[] aggregates
	// (--window); 0 → model.DefaultWindow.
	ClientsWindow time.Duration
}

// Health is the poller's own state for the TUI header.
type Health struct {
	Followed, InFlight              int
	BudgetAvailable, BudgetCapacity float64 // retry budget tokens
	Polls, Retries, GiveUps         int64
	LastError                       *model.ErrorInfo
	EventsDropped                   int64
	// BatchCalls counts batch confirmation requests (query history by
	// statement ids); Polls counts per-operation status polls.
	BatchCalls int64
	Capacity   Capacity  // concurrency: latency, AIMD cap, ceiling, throttling
	Freshness  Freshness // whether the freshness goal holds, and why not
	// LastDiscovery is when discovery last succeeded (zero: never);
	// DiscoveryFailures counts the rounds that failed.
	// DiscoveryUp: the last round succeeded (the workspace is observed).
	LastDiscovery     time.Time
	DiscoveryFailures int64
	DiscoveryUp       bool
}

// entry is one followed operation with its scheduling state. Its flags
// sit together at the end: with 50,000 followed operations at 10,000
// live, its size class counts (docs/performance.md, heap per operation):
// 640 bytes with the allocator's 8-byte header (TestEntryFitsItsSizeClass).
type entry struct {
	op  model.Operation
	ref sources.Ref
	// Instants the engine alone reads are stamps (heap.go), 8 bytes
	// instead of 24.
	next       int64   // next status poll (stamp), valid while idx >= 0
	key        int64   // its place in the poll heap, next or earlier (pollHeap)
	idx, didx  int32   // positions in the poll heap and e.due; -1: not there
	retiredAt  int64   // when it stopped being polled (stamp)
	seen       uint64  // the full discovery by which it was last listed (merge)
	terminalAt int64   // first seen terminal (stamp; valid with terminal)
	rate       float64 // expected per-operation polls per second (demand)
	listed     uint64  // the last live listing round that showed it
	readRound  uint64  // the RunOnce round that last read its status
	// view is the operation's latest evaluated view, shared with every
	// snapshot that holds it; flagged is the generation of the view whose
	// flags were last compared for events (evalFlags): a number, so that
	// the engine does not keep an old view alive.
	view    model.ViewCache
	flagged uint64
	// due: the instant (stamp) at which its view may next differ with
	// time alone; dkey, its place in e.due, is due or earlier (dueHeap).
	due, dkey int64

	polling  bool
	retired  bool // no longer polled (closed, gone)
	closing  bool // a close attempt is in flight
	queued   bool // in the close queue
	terminal bool // terminalAt is set
	deleted  bool // forgotten (left e.ops; still in e.order until compacted)
	probe    bool // an activity probe is due (batch mode)
	// dirty: en.op changed since view was last brought up to date
	// (touch); inChanged: en is in e.changed; inLive: en is in e.live.
	dirty, inChanged, inLive bool
	closeFails               int32 // consecutive failed close rounds
}

// Engine follows a workspace's operations and endpoints.
type Engine struct {
	o   Options
	clk retry.Clock
	pol *retry.Policy

	events  chan model.Event
	emitMu  sync.Mutex
	dropped atomic.Int64

	mu          sync.Mutex
	ops         map[string]*entry
	heap        pollHeap
	eps         []model.Endpoint
	wsErrs      map[string]model.ErrorInfo
	discKeys    map[string]bool // wsErrs keys the last discovery set
	round       uint64          // RunOnce rounds
	lastErr     *model.ErrorInfo
	polls       int64
	inflight    int
	gen         uint64
	discovering bool
	lastDisc    time.Time // last successful discovery
	lastFull    time.Time // last discovery that listed ended statements without a problem
	lastFullN   int       // ended statements it listed
	discFails   int64     // failed discovery rounds
	discFailed  bool      // the last discovery round failed
	capRunning  bool
	memLearned  memLearned              // Learned when Options.Learned is nil
	flags       map[string][]model.Flag // kinds and severities last compared (evalFlags)
	closeQ      map[string]*entry       // queued closes (few; scanned each turn)

	lim          *limiter
	rateSum      float64         // Σ entry.rate
	batchQ       [][]sources.Ref // chunks of the current round not yet sent
	batchPending int             // chunks of the current round not yet answered
	batchCalls   int64
	listRounds   uint64               // live listing rounds started (entry.listed)
	listBuf      []sources.Discovered // a page's rows, kept for the next round (listRound takes it)
	activity     bool                 // the status source reports client activity
	probes       int                  // activity probes made
	fresh        Freshness
	liveN        int      // live operations, counted after merges and once a second
	live         []*entry // those operations (some may have ended since)

	changed     []*entry // operations touched since the last evalFlags
	due         dueHeap  // operations whose view a time deadline changes
	order       []*entry // by statement id; see addOrdered
	orderSorted int      // order[:orderSorted] is sorted; the rest came since
	orderSpare  []*entry // the other buffer of the merge (empty)
	orderHoles  bool     // some entries of order were deleted

	listing *model.WarehouseListing // Options.Warehouses after the last good discovery

	wake    chan struct{}
	busy    atomic.Int64  // engine goroutines at work (tests)
	parked  atomic.Bool   // the loop waits for time or a wake (tests)
	loopAt  atomic.Int64  // when the parked loop wakes by itself, unix ns (tests)
	sigGen  atomic.Uint64 // signals sent to the loop (tests)
	parkGen atomic.Uint64 // signals the parked loop has taken into account (tests)
	hook    func()        // tests: something changed that may settle the engine
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
		o:          o,
		clk:        retry.ClockOr(o.Clock),
		events:     make(chan model.Event, 4096),
		ops:        map[string]*entry{},
		wsErrs:     map[string]model.ErrorInfo{},
		flags:      map[string][]model.Flag{},
		wake:       make(chan struct{}, 1),
		closeQ:     map[string]*entry{},
		memLearned: memLearned{},
		lim:        newLimiter(o.MaxInFlight),
	}
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
func (e *Engine) Events() <-chan model.Event { return e.events }

// ReadOnly reports whether mutating actions are refused.
func (e *Engine) ReadOnly() bool { return e.o.ReadOnly }

// Policy returns the engine's retry policy (shared by all its calls).
func (e *Engine) Policy() *retry.Policy { return e.pol }

// Run follows the workspace until ctx is done, then cancels in-flight
// calls, waits for every goroutine it started and returns nil.
func (e *Engine) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	spawn := func(fn func(context.Context)) {
		wg.Add(1)
		e.busy.Add(1)
		go func() {
			defer wg.Done()
			fn(ctx)
			e.sigGen.Add(1) // before busy drops: tests must not see a settled engine in between
			e.busy.Add(-1)
			e.signal()
		}()
	}
	nextRefresh := e.clk.Now()
	nextFlags := nextRefresh
	nextBatch := nextRefresh
	for {
		gen := e.sigGen.Load()
		now := e.clk.Now()
		e.mu.Lock()
		if !now.Before(nextRefresh) {
			nextRefresh = now.Add(e.o.Refresh)
			if !e.discovering {
				e.discovering = true
				spawn(func(ctx context.Context) { _ = e.discoverRound(ctx) })
			}
			if e.o.Capacity != nil && !e.capRunning {
				e.capRunning = true
				spawn(e.capacityRound)
			}
		}
		if e.batchMode() && !now.Before(nextBatch) {
			nextBatch = now.Add(e.batchPeriod())
			if e.batchPending == 0 {
				e.startBatch(spawn)
			}
		}
		limit := e.lim.limit(e.demand(), e.budgetShare())
		for e.inflight < limit && len(e.batchQ) > 0 {
			c := e.batchQ[0]
			e.batchQ = e.batchQ[1:]
			e.inflight++
			spawn(func(ctx context.Context) { e.confirmChunk(ctx, c) })
		}
		for e.inflight < limit {
			en := e.heap.popDue(now)
			if en == nil {
				break
			}
			en.polling = true
			e.inflight++
			spawn(func(ctx context.Context) { e.pollOne(ctx, en) })
		}
		next := nextRefresh
		if e.batchMode() && nextBatch.Before(next) {
			next = nextBatch
		}
		for _, en := range e.closeQ {
			if !en.closing {
				if !en.op.Close.NextTry.After(now) {
					en.closing = true
					spawn(func(ctx context.Context) { e.closeRound(ctx, en) })
				} else if en.op.Close.NextTry.Before(next) {
					next = en.op.Close.NextTry
				}
			}
		}
		if at := e.heap.first(); !at.IsZero() && e.inflight < limit && at.Before(next) {
			next = at // perhaps a poll put off: popDue files it again
		}
		e.mu.Unlock()
		if !now.Before(nextFlags) {
			e.evalFlags()
			nextFlags = now.Add(time.Second)
		}
		if nextFlags.Before(next) {
			next = nextFlags
		}
		timer := e.clk.After(next.Sub(now))
		// Recorded after After, so never earlier than the timer (tests).
		e.loopAt.Store(e.clk.Now().Add(next.Sub(now)).UnixNano())
		e.parkGen.Store(gen)
		e.parked.Store(true)
		e.notifyHook()
		select {
		case <-ctx.Done():
			e.parked.Store(false)
			cancel()
			wg.Wait()
			return nil
		case <-timer:
		case <-e.wake:
		}
		e.parked.Store(false)
	}
}

func (e *Engine) signal() {
	e.sigGen.Add(1)
	select {
	case e.wake <- struct{}{}:
	default:
	}
	e.notifyHook()
}

func (e *Engine) notifyHook() {
	if e.hook != nil {
		e.hook()
	}
}

// RunOnce observes once: one discovery, one status poll of each followed
// operation and one capacity round. It returns the discovery error, if
// any (the workspace could not be observed). Do not call it while Run runs.
func (e *Engine) RunOnce(ctx context.Context) error {
	e.mu.Lock()
	e.discovering = true
	// The round starts before discovery: a state that discovery's listing
	// confirms (batch mode) is read in this round.
	e.round++
	e.mu.Unlock()
	// A failed discovery still polls the operations already known.
	derr := e.discoverRound(ctx)
	e.mu.Lock()
	// What this round must read: every operation scheduled for polls.
	want := slices.Clone(e.heap)
	e.mu.Unlock()
	var wg sync.WaitGroup
	if e.o.Capacity != nil {
		e.mu.Lock()
		e.capRunning = true
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
		if e.activity {
			e.pollWhere(ctx, func(*entry) bool { return true })
		} else {
			e.runBatch(ctx, e.o.MaxInFlight)
			// What no listing confirmed this round is asked one by one.
			e.pollWhere(ctx, func(en *entry) bool {
				return !en.op.State.Terminal() && en.op.LastPollOKAt.Before(start)
			})
		}
	}
	wg.Wait()
	e.mu.Lock()
	e.roundStatus(want, errCtx(ctx))
	e.mu.Unlock()
	e.evalFlags()
	return derr
}

// pollWhere polls, once each and within MaxInFlight, the scheduled
// operations that match (RunOnce).
func (e *Engine) pollWhere(ctx context.Context, match func(*entry) bool) {
	e.mu.Lock()
	var due []*entry
	for _, en := range slices.Clone(e.heap) {
		if match(en) {
			e.heap.remove(en)
			en.polling = true
			e.inflight++
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

// discoverRound runs one discovery and merges its result. Each request
// of the discovery goes through the policy on its own (e.retry). A
// partial result (a truncated listing, a failed side listing) is merged
// and its problems become workspace errors; only a discovery that read
// nothing is an error.
func (e *Engine) discoverRound(ctx context.Context) error {
	e.mu.Lock()
	start := e.clk.Now()
	scope := e.discoveryScope(start)
	e.mu.Unlock()
	ds, err := sources.DiscoverIn(ctx, e.o.Discoverer, e.retry, scope)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.discovering = false
	now := e.clk.Now()
	var partial *sources.PartialError
	if err != nil && !errors.As(err, &partial) {
		e.discFails++
		e.discFailed = true
		if ctx.Err() == nil || len(e.discKeys) == 0 {
			e.setDiscoveryErrors([]error{err})
		}
		return fmt.Errorf("discovering operations: %w", err)
	}
	var problems []error
	if partial != nil {
		problems = partial.Errs
	}
	e.setDiscoveryErrors(problems)
	e.lastDisc, e.discFailed = now, false
	if e.o.Warehouses != nil {
		if l, ok := e.o.Warehouses.WarehouseListing(); ok {
			e.listing = &l
		}
	}
	full := !scope.NoFinished
	if full && len(problems) == 0 {
		e.lastFull, e.lastFullN = start, 0 // the pace is from start to start
		for i := range ds {
			if ds[i].Op.State.Terminal() {
				e.lastFullN++ // what the listing of ended statements read
			}
		}
	}
	e.merge(ds, now, full)
	return nil
}

// discoveryScope narrows a discovery to what it is still needed for
// (e.mu held). Live statements: the batch listing reads every one of
// them each BatchEvery and adopts the new ones, so while it runs (some
// live operation is followed) discovery does not list them again. Ended
// statements: they matter only from --leak-after after their end, so a
// full discovery that reads many rows comes at most every
// finishedRowsPerSecond on average and at least every FinishedEvery; a
// small one (a quiet workspace, where a statement that ended between two
// listings should show at once) every time. The first discovery, and one
// after a listing with a problem, is full.
func (e *Engine) discoveryScope(now time.Time) sources.Scope {
	var sc sources.Scope
	if e.lastFull.IsZero() {
		return sc
	}
	if _, ok := e.o.Batch.(sources.LiveLister); ok && e.liveN > 0 {
		sc.NoLive = true
	}
	rate := e.o.finishedRows
	if rate <= 0 {
		rate = finishedRowsPerSecond
	}
	pace := min(e.o.FinishedEvery, time.Duration(e.lastFullN)*time.Second/time.Duration(rate))
	if now.Sub(e.lastFull) < pace { // FinishedEvery < 0: never
		sc.NoFinished = true
	}
	return sc
}

// finishedRowsPerSecond: the average pace at which full discoveries may
// read ended statements (5,000 listed: one every 20 s).
const finishedRowsPerSecond = 250

func (e *Engine) recordWSError(call string, err error) {
	info := retry.ErrorInfoOf(err)
	if info.Call == "" {
		info.Call = call
	}
	e.wsErrs[call] = *info
	e.lastErr = info
}

// merge adds newly discovered operations and refreshes descriptive fields
// of known ones. An operation missing from discovery is not dropped: it is
// followed until it is closed or gone, then retained for retainFor, and
// forgotten only after a full discovery (one that listed ended
// statements) no longer lists it.
func (e *Engine) merge(ds []sources.Discovered, now time.Time, full bool) {
	e.adopt(ds, now)
	if !full {
		return
	}
	e.liveCount()
	// Every listing since the last full discovery marked what it listed
	// with this generation (adopt, listRound).
	e.gen++
	for id, en := range e.ops {
		if en.retired && !en.queued && en.seen != e.gen && now.Sub(unstamp(en.retiredAt)) > retainFor {
			delete(e.ops, id)
			delete(e.flags, id)
			e.due.remove(en)
			en.deleted, e.orderHoles = true, true
		}
	}
}

// discoveredID is the id a discovered operation is followed by.
func discoveredID(d *sources.Discovered) string {
	if d.Op.StatementID != "" {
		return d.Op.StatementID
	}
	return d.Ref.StatementID
}

// adopt follows the listed operations that are new and refreshes the
// descriptive fields of known ones (a discovery, or the batch listing's
// first sight of a statement). e.mu held.
func (e *Engine) adopt(ds []sources.Discovered, now time.Time) (added []*entry) {
	for i := range ds {
		d := &ds[i]
		id := discoveredID(d)
		if id == "" {
			continue
		}
		en, ok := e.ops[id]
		if !ok {
			op := d.Op
			op.StatementID = id
			op.FirstSeenAt = now
			if op.Close.State == "" {
				op.Close.State = model.CloseNA
			}
			if op.State == "" {
				op.State = model.StateUnknown
			}
			en = &entry{op: op, ref: d.Ref, idx: -1, didx: -1}
			e.touch(en)
			if en.ref.StatementID == "" {
				en.ref.StatementID = id
			}
			e.ops[id] = en
			added = append(added, en)
			if op.State == model.StateClosed || (op.State.Terminal() && op.Open != nil && !*op.Open) {
				en.retired, en.retiredAt = true, stamp(now)
			} else if e.batchMode() && op.State != model.StateUnknown {
				// Listed by query history: that is a confirmation. A few
				// first operations get one poll of their own, to learn
				// whether the status source reports client activity.
				e.confirm(en, sources.ListedStatus(&op), now)
				if e.probes < activityProbes && !en.retired {
					e.probes++
					en.probe, en.next = true, stamp(now)
					e.heap.reschedule(en)
				}
			} else {
				en.next = stamp(now)
				e.heap.push(en)
			}
			e.emit(model.Event{At: now, Kind: model.EventDiscovered, StatementID: id, Message: fmt.Sprintf("following %s on %s (%s)", id, op.WarehouseID, op.State)})
		} else {
			o := &en.op
			// Usually nothing here changes: touched only when it does.
			w, u := setIf(&o.WarehouseID, d.Op.WarehouseID), setIf(&o.User, d.Op.User)
			a, q := setIf(&o.ClientApplication, d.Op.ClientApplication), setIf(&o.SQL, d.Op.SQL)
			if w || u || a || q {
				e.touch(en)
			}
			if o.StartedAt.IsZero() && !d.Op.StartedAt.IsZero() {
				e.touch(en)
				o.StartedAt = d.Op.StartedAt
			}
			if len(d.Ref.Secret) > 0 {
				en.ref.Secret = d.Ref.Secret
			}
			if d.Op.Proxy != nil {
				// What a proxy saw on the wire (proxy.Merge): its account,
				// and the owning client's last call, which no server tells.
				e.touch(en)
				o.Proxy = d.Op.Proxy
				if d.Op.ClientActivityKnown && d.Op.ClientLastActivity.After(o.ClientLastActivity) {
					o.ClientActivityKnown, o.ClientLastActivity = true, d.Op.ClientLastActivity
				}
			}
			if e.batchMode() && d.Op.State != "" && d.Op.State != model.StateUnknown && !en.retired {
				// A listing of query history confirms like a batch.
				e.confirm(en, sources.ListedStatus(&d.Op), now)
			} else if o.LastPollOKAt.IsZero() && d.Op.State != "" && o.State != d.Op.State {
				e.touch(en)
				o.State = d.Op.State
			}
			// Discovery says it ended while we still think it runs: confirm
			// with a status poll now instead of at the next scheduled one.
			// Detection becomes the earlier of the two schedules, at no
			// extra cost for operations that keep running.
			if d.Op.State.Terminal() && !o.State.Terminal() && !en.retired && !en.polling && en.idx >= 0 && en.next > stamp(now) {
				en.next = stamp(now)
				e.heap.reschedule(en)
			}
		}
		en.seen = e.gen + 1 // listed before the next full discovery
	}
	for _, en := range added {
		e.addLive(en)
	}
	e.addOrdered(added)
	return added
}

// The engine keeps its operations ordered by statement id, the order a
// snapshot lists them in after severity (model.SortOperations then only
// moves the flagged ones to the front, instead of sorting every
// operation each refresh). New ones are appended unsorted; ordered sorts
// them among themselves and merges them in, and compacts the holes that
// forgotten ones leave.
func (e *Engine) addOrdered(added []*entry) {
	e.order = append(e.order, added...)
}

func entryCmp(a, b *entry) int { return strings.Compare(a.op.StatementID, b.op.StatementID) }

// ordered returns the operations ordered by statement id (e.mu held).
func (e *Engine) ordered() []*entry {
	if n := e.orderSorted; n < len(e.order) {
		head, tail := e.order[:n], e.order[n:]
		slices.SortFunc(tail, entryCmp)
		if n > 0 && entryCmp(head[n-1], tail[0]) > 0 {
			merged := e.orderSpare[:0]
			i, j := 0, 0
			for i < len(head) && j < len(tail) {
				if entryCmp(tail[j], head[i]) < 0 {
					merged = append(merged, tail[j])
					j++
				} else {
					merged = append(merged, head[i])
					i++
				}
			}
			merged = append(append(merged, head[i:]...), tail[j:]...)
			clear(e.order) // the spare holds no entry
			e.order, e.orderSpare = merged, e.order[:0]
		}
		e.orderSorted = len(e.order)
	}
	if e.orderHoles {
		e.order = slices.DeleteFunc(e.order, func(en *entry) bool { return en.deleted })
		e.orderHoles = false
		e.orderSorted = len(e.order)
	}
	return e.order
}

// setIf keeps the string it has when v says the same: the next view
// then compares it by pointer, not byte by byte (model.ViewCache), and
// the listing's copy is left to the collector.
func setIf(dst *string, v string) bool {
	if v != "" && v != *dst {
		*dst = v
		return true
	}
	return false
}

// touch records that en.op is about to change (e.mu held): its cached
// view is no longer trusted without a comparison (viewOf), and the next
// evalFlags looks at it. Every write to an entry's operation goes with a
// touch; the package's tests verify it (verifyViews).
func (e *Engine) touch(en *entry) {
	en.dirty = true
	if !en.inChanged {
		en.inChanged = true
		e.changed = append(e.changed, en)
	}
}

// viewOf is en's view at now (e.mu held): the cached one without
// comparing the operation when nothing touched it and no deadline is due.
func (e *Engine) viewOf(en *entry, now time.Time) *model.OperationView {
	if !en.dirty && en.view.Gen() > 0 {
		if v, ok := en.view.Fresh(now); ok {
			if verifyViews {
				e.verifyView(en, now)
			}
			return v
		}
		// Only time moved: evaluated again from the view's own copy.
		v := en.view.Aged(now, e.o.Thresholds)
		if verifyViews {
			e.verifyAged(en, v, now)
		}
		return v
	}
	en.dirty = false
	v, _ := en.view.View(&en.op, now, e.o.Thresholds)
	return v
}

// verifyViews makes the package's tests check that every change to an
// operation was touched: a view trusted without comparison must be what
// a comparison gives. The first difference is kept in viewViolation
// (not a panic: e.mu is held).
var (
	verifyViews   bool
	viewViolation atomic.Pointer[string]
)

// verifyAged checks that a view evaluated again from its own copy is
// what a fresh evaluation of the operation gives.
func (e *Engine) verifyAged(en *entry, v *model.OperationView, now time.Time) {
	if fresh := model.EvaluateView(en.op, now, e.o.Thresholds); !reflect.DeepEqual(v, fresh) {
		msg := fmt.Sprintf("poller: operation %s changed without touch:\naged %+v\nfresh %+v", en.op.StatementID, v, fresh)
		viewViolation.CompareAndSwap(nil, &msg)
	}
}

func (e *Engine) verifyView(en *entry, now time.Time) {
	before, _ := en.view.Fresh(now)
	if v, changed := en.view.View(&en.op, now, e.o.Thresholds); changed {
		msg := fmt.Sprintf("poller: operation %s changed without touch:\nwas %+v\nnow %+v", en.op.StatementID, before, v)
		viewViolation.CompareAndSwap(nil, &msg)
	}
}

// retire stops polling en; it stays in the snapshot for retainFor.
func (e *Engine) retire(en *entry, now time.Time) {
	if en.idx >= 0 {
		e.heap.remove(en)
	}
	e.setRate(en, 0)
	en.retired, en.retiredAt = true, stamp(now)
}

func (e *Engine) logf(format string, args ...any) {
	if e.o.Logf != nil {
		e.o.Logf("%s", sources.Redact(fmt.Sprintf(format, args...)))
	}
}

// settled reports (for tests with a fake clock) that nothing can happen
// until the clock moves: the loop is parked with nothing due and every
// busy goroutine waits out a backoff that ends in the future.
func (e *Engine) settled() bool {
	now := e.clk.Now()
	if !e.parked.Load() || e.parkGen.Load() != e.sigGen.Load() || e.loopAt.Load() <= now.UnixNano() {
		return false
	}
	n, allAfter := e.pol.SleepingUntil(now)
	return allAfter && int64(n) == e.busy.Load()
}
