package poller

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// memWorkspace is an in-memory workspace for the batch path: discovery
// and batches read its "history" (which may lag), per-operation status
// reads the engine's truth. It counts every call.
type memWorkspace struct {
	mu       sync.Mutex
	state    map[string]model.State // the engine's truth
	history  map[string]model.State // what query history says
	hidden   map[string]bool        // not listed by history at all
	open     map[string]bool
	done     map[string]time.Time // completion times
	activity *time.Time           // volunteered client activity (nil: none, like a real server)
	limit    int
	throttle int // the next n batch requests answer 429

	discovers, batches, statuses int
	perOp                        map[string]int
}

func newMemWorkspace(limit int) *memWorkspace {
	return &memWorkspace{state: map[string]model.State{}, history: map[string]model.State{},
		hidden: map[string]bool{}, open: map[string]bool{}, done: map[string]time.Time{}, perOp: map[string]int{}, limit: limit}
}

func (w *memWorkspace) set(id string, st model.State) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state[id], w.history[id], w.open[id] = st, st, true
}

func (w *memWorkspace) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.discovers++
	if w.throttle > 0 {
		w.throttle--
		return nil, &sources.HTTPError{Call: "ListQueries", StatusCode: http.StatusTooManyRequests, ErrorCode: "REQUEST_LIMIT_EXCEEDED"}
	}
	var out []sources.Discovered
	for id, st := range w.history {
		if !w.hidden[id] {
			out = append(out, sources.Discovered{Op: model.Operation{StatementID: id, State: st, SQL: "SELECT " + id}, Ref: sources.Ref{StatementID: id}})
		}
	}
	return out, nil
}

func (w *memWorkspace) Status(_ context.Context, ref sources.Ref) (sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.statuses++
	w.perOp[ref.StatementID]++
	if w.throttle > 0 {
		w.throttle--
		return sources.Status{}, &sources.HTTPError{Call: "GetOperationStatus", StatusCode: http.StatusServiceUnavailable, ErrorCode: "TEMPORARILY_UNAVAILABLE"}
	}
	o := w.open[ref.StatementID]
	return sources.Status{State: w.state[ref.StatementID], Open: &o, ClientLastActivity: w.activity, CompletedAt: w.done[ref.StatementID]}, nil
}

func (w *memWorkspace) BatchLimit() int { return w.limit }

func (w *memWorkspace) StatusBatch(_ context.Context, refs []sources.Ref) (map[string]sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.batches++
	if len(refs) > w.limit {
		panic("batch over the limit")
	}
	if w.throttle > 0 {
		w.throttle--
		return nil, &sources.HTTPError{Call: "ListQueries", StatusCode: http.StatusTooManyRequests, ErrorCode: "REQUEST_LIMIT_EXCEEDED"}
	}
	out := map[string]sources.Status{}
	for _, r := range refs {
		if st, ok := w.history[r.StatementID]; ok && !w.hidden[r.StatementID] {
			out[r.StatementID] = sources.Status{State: st, CompletedAt: w.done[r.StatementID]}
		}
	}
	return out, nil
}

func (w *memWorkspace) counts() (d, b, s int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.discovers, w.batches, w.statuses
}

func batchOptions(w *memWorkspace) Options {
	return Options{Discoverer: w, Status: w, Batch: w,
		Thresholds: model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: 20 * time.Second}}
}

// Batches confirm every live operation: per-operation polls are only the
// activity probes, requests are ⌈live/limit⌉ a second, and every live
// operation's last_poll_ok_at stays within a batch period of now.
func TestBatchConfirmsLiveOperations(t *testing.T) {
	w := newMemWorkspace(50)
	const n = 500
	for i := range n {
		w.set(opID(i), model.StateRunning)
	}
	h := startEngine(t, batchOptions(w))
	h.run(2*time.Second, 100*time.Millisecond)
	_, b0, s0 := w.counts()
	h.run(60*time.Second, 100*time.Millisecond)
	d, b, s := w.counts()
	if s > activityProbes {
		t.Errorf("%d per-operation status calls, want at most the %d activity probes", s, activityProbes)
	}
	if got, want := b-b0, 60*n/50; got < want*9/10 || got > want*11/10 {
		t.Errorf("%d batch requests in 60 s, want ~%d (10 a second)", got, want)
	}
	calls := float64(d+b-b0+s-s0) / (float64(n) * 1) // per op-minute
	t.Logf("calls per operation-minute: %.3f (%d discoveries, %d batches, %d polls)", calls, d, b-b0, s-s0)
	if calls > 1.5 {
		t.Errorf("%.2f calls per operation-minute, want ≤ 1.5", calls)
	}
	now := h.clk.Now()
	for _, v := range h.e.Snapshot().Operations {
		if age := now.Sub(v.LastPollOKAt); age > time.Second {
			t.Fatalf("%s last confirmed %v ago, want ≤ 1 s", v.StatementID, age)
		}
	}
	if f := h.e.Health().Freshness; !f.Held || f.Live != n {
		t.Errorf("freshness %+v, want held over %d", f, n)
	}
}

// A state change read in a batch is applied at once (with its event);
// a lagging history never takes an operation back from a terminal state.
func TestBatchAppliesChangesAndIgnoresLag(t *testing.T) {
	w := newMemWorkspace(10)
	w.set(opID(1), model.StateRunning)
	w.set(opID(2), model.StateRunning)
	h := startEngine(t, batchOptions(w))
	h.run(2*time.Second, 100*time.Millisecond)
	h.drain()
	w.mu.Lock()
	w.state[opID(1)], w.history[opID(1)] = model.StateFinished, model.StateFinished
	w.mu.Unlock()
	h.run(1100*time.Millisecond, 100*time.Millisecond)
	if st := h.op(opID(1)).State; st != model.StateFinished {
		t.Fatalf("state after a batch listing FINISHED: %s", st)
	}
	found := false
	for _, ev := range h.drain() {
		found = found || (ev.Kind == model.EventStateChange && ev.StatementID == opID(1))
	}
	if !found {
		t.Error("no state event for the change read in a batch")
	}
	// History lags: it says RUNNING for an operation the engine knows ended.
	w.mu.Lock()
	w.history[opID(1)] = model.StateRunning
	w.mu.Unlock()
	h.run(3*time.Second, 100*time.Millisecond)
	if st := h.op(opID(1)).State; st != model.StateFinished {
		t.Errorf("a lagging history took the operation back to %s", st)
	}
}

// Openness is asked per operation, first when UNCLOSED could matter
// (LeakAfter after the end), then every 10 s while open, so UNCLOSED
// keeps its evidence.
func TestBatchOpennessPolledFromLeakAfter(t *testing.T) {
	w := newMemWorkspace(10)
	w.set(opID(1), model.StateRunning)
	h := startEngine(t, Options{Discoverer: w, Status: w, Batch: w,
		Thresholds: model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: 20 * time.Second}})
	h.run(2*time.Second, 100*time.Millisecond)
	w.mu.Lock()
	w.state[opID(1)], w.history[opID(1)] = model.StateFinished, model.StateFinished
	w.done[opID(1)] = h.clk.Now()
	base := w.perOp[opID(1)]
	w.mu.Unlock()
	h.run(19*time.Second, 100*time.Millisecond)
	w.mu.Lock()
	early := w.perOp[opID(1)] - base
	w.mu.Unlock()
	if early != 0 {
		t.Errorf("%d openness polls before LeakAfter", early)
	}
	h.run(3*time.Second, 100*time.Millisecond)
	v := h.op(opID(1))
	if v.Open == nil || !*v.Open || !hasFlag(v, model.FlagUnclosed) {
		t.Errorf("after LeakAfter: open %v, flags %v; want open and UNCLOSED", v.Open, v.Flags)
	}
	h.run(30*time.Second, 100*time.Millisecond)
	w.mu.Lock()
	later := w.perOp[opID(1)] - base
	w.mu.Unlock()
	if later < 3 || later > 5 {
		t.Errorf("%d openness polls in the 33 s after LeakAfter, want ~4 (every 10 s)", later)
	}
}

// An operation history does not list is polled on its own after the
// grace period; a source that reports client activity keeps every live
// operation on its per-operation schedule (INACTIVE keeps its evidence).
func TestBatchFallbackAndActivity(t *testing.T) {
	w := newMemWorkspace(10)
	w.set(opID(1), model.StateRunning)
	w.set(opID(2), model.StateRunning)
	h := startEngine(t, batchOptions(w))
	h.run(2*time.Second, 100*time.Millisecond)
	w.mu.Lock()
	w.hidden[opID(2)] = true
	base := w.perOp[opID(2)]
	w.mu.Unlock()
	h.run(10*time.Second, 100*time.Millisecond)
	w.mu.Lock()
	fb := w.perOp[opID(2)] - base
	w.mu.Unlock()
	if fb < 2 || fb > 4 {
		t.Errorf("%d fallback polls of an unlisted operation in 10 s, want ~3 (every %v)", fb, 3*time.Second)
	}
	if age := h.clk.Now().Sub(h.op(opID(2)).LastPollOKAt); age > 3500*time.Millisecond {
		t.Errorf("unlisted operation confirmed %v ago", age)
	}

	at := h.clk.Now()
	w2 := newMemWorkspace(10)
	w2.activity = &at
	for i := range 10 {
		w2.set(opID(i), model.StateRunning)
	}
	h2 := startEngine(t, batchOptions(w2))
	h2.run(30*time.Second, 100*time.Millisecond)
	w2.mu.Lock()
	defer w2.mu.Unlock()
	for i := range 10 {
		if c := w2.perOp[opID(i)]; c < 8 {
			t.Errorf("%s: %d per-operation polls in 30 s with client activity reported, want its schedule (~1-2 s)", opID(i), c)
		}
	}
}

// Throttled batches and polls halve the concurrency cap; the freshness
// report says the goal is not held, and why. (Throttled batches alone are
// covered by the per-operation fallback.)
func TestBatchThrottledSaysWhy(t *testing.T) {
	w := newMemWorkspace(10)
	for i := range 100 {
		w.set(opID(i), model.StateRunning)
	}
	h := startEngine(t, batchOptions(w))
	h.run(2*time.Second, 100*time.Millisecond)
	w.mu.Lock()
	w.throttle = 1 << 30
	w.mu.Unlock()
	h.run(30*time.Second, 100*time.Millisecond)
	hl := h.e.Health()
	if hl.Capacity.Cap >= hl.Capacity.Ceiling/2 || !hl.Capacity.Throttled {
		t.Errorf("capacity after throttling: %+v; want the cap halved and throttled", hl.Capacity)
	}
	f := hl.Freshness
	if f.Held || f.Reason == "" || !contains(f.Reason, "throttled") {
		t.Errorf("freshness %+v; want not held, because throttled", f)
	}
	found := false
	for _, e := range h.e.Snapshot().Errors {
		found = found || (e.Call == callFreshness && contains(e.Message, "throttled"))
	}
	if !found {
		t.Errorf("snapshot errors lack the freshness entry: %+v", h.e.Snapshot().Errors)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// The limiter: Little's law from latency and demand, within the AIMD cap
// (halved on 429/503 at most once a second, +1 per cap answers) and the
// ceiling, and shrinking with the retry budget.
func TestLimiterLittleAndAIMD(t *testing.T) {
	t0 := newFakeClock().Now()
	l := newLimiter(64)
	if n := l.limit(1000, 1); n != minInFlight {
		t.Errorf("no latency known: %d, want %d", n, minInFlight)
	}
	for range 50 {
		l.observe(t0, 50*time.Millisecond, nil)
	}
	if n := l.limit(200, 1); n != 20 { // 2 × 200/s × 50 ms
		t.Errorf("200/s at 50 ms: %d in flight, want 20", n)
	}
	if n := l.limit(10_000, 1); n != 64 {
		t.Errorf("over the ceiling: %d, want 64", n)
	}
	if n := l.limit(10_000, 0.25); n != 16 {
		t.Errorf("a quarter of the budget: %d, want 16", n)
	}
	thr := &sources.HTTPError{StatusCode: 429, ErrorCode: "REQUEST_LIMIT_EXCEEDED"}
	l.observe(t0, 0, thr)
	l.observe(t0.Add(100*time.Millisecond), 0, thr) // same burst: one decrease
	if c := l.capacity(t0); c.Cap != 32 || !c.Throttled {
		t.Errorf("after a burst of 429s: %+v, want cap 32", c)
	}
	l.observe(t0.Add(2*time.Second), 0, &sources.HTTPError{StatusCode: 503})
	if c := l.capacity(t0); c.Cap != 16 {
		t.Errorf("after a 503 a second later: cap %d, want 16", c.Cap)
	}
	l.observe(t0, 0, &sources.HTTPError{StatusCode: 429, ErrorCode: "RESOURCE_EXHAUSTED"})
	if c := l.capacity(t0); c.Cap != 16 {
		t.Errorf("RESOURCE_EXHAUSTED is capacity, not rate: cap %d", c.Cap)
	}
	for range 20 {
		l.observe(t0, 50*time.Millisecond, nil)
	}
	if c := l.capacity(t0); c.Cap != 17 {
		t.Errorf("after 20 answers at cap 16: cap %d, want 17 (additive: +1 per cap answers)", c.Cap)
	}
}

// listingWorkspace also lists live statements, pageSize a page, newest
// (highest id) first, with a cursor token.
type listingWorkspace struct {
	*memWorkspace
	pageSize int
	pages    int
}

func (w *listingWorkspace) ListLive(_ context.Context, token string, dst []sources.Discovered) ([]sources.Discovered, string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pages++
	var ids []string
	for id, st := range w.history {
		if st.Live() && !w.hidden[id] && (token == "" || id < token) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	out := dst[:0]
	next := ""
	for i, id := range ids {
		if i == w.pageSize {
			next = ids[i-1]
			break
		}
		d := sources.Discovered{Op: model.Operation{StatementID: id, State: w.history[id], SQL: "SELECT " + id}, Ref: sources.Ref{StatementID: id}}
		out = append(out, d)
	}
	return out, next, nil
}

// startListing runs an engine with a live listing over n running
// operations (pages of 200, id lookups of 50), 2 s in.
func startListing(t *testing.T, n int) (*listingWorkspace, *harness) {
	w := &listingWorkspace{memWorkspace: newMemWorkspace(50), pageSize: 200}
	for i := range n {
		w.set(opID(i), model.StateRunning)
	}
	h := startEngine(t, Options{Discoverer: w, Status: w, Batch: w,
		Thresholds: model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: 20 * time.Second}})
	h.run(2*time.Second, 100*time.Millisecond)
	return w, h
}

// With a live listing, a round costs ⌈live / page⌉ requests; what the
// listing misses (ended, or not yet listed) is looked up by id, so an end
// is still read from history at once.
func TestBatchLiveListing(t *testing.T) {
	const n = 1000
	w, h := startListing(t, n)
	w.mu.Lock()
	p0, b0 := w.pages, w.batches
	w.mu.Unlock()
	h.run(30*time.Second, 100*time.Millisecond)
	w.mu.Lock()
	pages, batches := w.pages-p0, w.batches-b0
	w.state[opID(7)], w.history[opID(7)] = model.StateFailed, model.StateFailed
	w.mu.Unlock()
	if pages < 140 || pages > 160 {
		t.Errorf("%d listing pages in 30 s, want ~150 (5 a round, a round a second)", pages)
	}
	if batches != 0 {
		t.Errorf("%d id lookups while the listing showed every live operation", batches)
	}
	h.run(1100*time.Millisecond, 100*time.Millisecond)
	if st := h.op(opID(7)).State; st != model.StateFailed {
		t.Errorf("an operation gone from the listing: %s, want FAILED read by id", st)
	}
	w.mu.Lock()
	if w.batches == b0 {
		t.Error("no id lookup for the operation the listing no longer showed")
	}
	w.mu.Unlock()
	now := h.clk.Now()
	for _, v := range h.e.Snapshot().Operations {
		if v.State.Live() && now.Sub(v.LastPollOKAt) > time.Second {
			t.Fatalf("%s last confirmed %v ago", v.StatementID, now.Sub(v.LastPollOKAt))
		}
		if v.SQL == "" {
			t.Fatalf("%s lost its text in later rounds", v.StatementID)
		}
	}
}

// scopedWorkspace narrows its discoveries as asked, and records each
// scope.
type scopedWorkspace struct {
	*listingWorkspace
	scopes []sources.Scope
}

func (w *scopedWorkspace) DiscoverScope(_ context.Context, _ sources.Retry, sc sources.Scope) ([]sources.Discovered, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.discovers++
	w.scopes = append(w.scopes, sc)
	var out []sources.Discovered
	for id, st := range w.history {
		if !w.hidden[id] && ((st.Live() && !sc.NoLive) || (st.Terminal() && !sc.NoFinished)) {
			out = append(out, sources.Discovered{Op: model.Operation{StatementID: id, State: st, SQL: "SELECT " + id}, Ref: sources.Ref{StatementID: id}})
		}
	}
	return out, nil
}

// While the batch listing runs, discovery lists no live statement (the
// listing adopts new ones, within a batch period) and, when a full one
// reads many rows, lists ended ones every FinishedEvery; an ended operation still listed is never
// forgotten between two such listings, and one no longer listed is
// forgotten after retainFor.
func TestDiscoveryScopeFollowsTheBatchListing(t *testing.T) {
	w := &scopedWorkspace{listingWorkspace: &listingWorkspace{memWorkspace: newMemWorkspace(50), pageSize: 200}}
	for i := range 300 {
		w.set(opID(i), model.StateRunning)
	}
	for i := range 40 {
		w.set("ended-"+opID(i), model.StateFinished)
	}
	o := Options{Discoverer: w, Status: w, Batch: w, FinishedEvery: 30 * time.Second, finishedRows: 1, // 40+ ended: 40 s, capped at 30 s
		Thresholds: model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: 2 * time.Minute}}
	h := startEngine(t, o)
	h.run(2*time.Second, 100*time.Millisecond)
	// Two statements end and are closed: retired, listed as finished.
	w.mu.Lock()
	for _, id := range []string{opID(1), opID(2)} {
		w.state[id], w.history[id], w.open[id] = model.StateFinished, model.StateFinished, false
	}
	w.mu.Unlock()
	h.run(58*time.Second, 100*time.Millisecond)
	w.mu.Lock()
	scopes := slices.Clone(w.scopes)
	w.mu.Unlock()
	// DiscoverIn calls a full discovery Discover: only narrowed ones
	// reach DiscoverScope.
	if full := w.discovers - len(scopes); full != 1 || len(scopes) < 10 {
		t.Fatalf("%d full discoveries then %v: want one full, then one every 5 s", full, scopes)
	}
	finished := 0
	for i, sc := range scopes {
		if !sc.NoLive {
			t.Errorf("discovery %d listed live statements while the batch listing ran", i+1)
		}
		if !sc.NoFinished {
			finished++
		}
	}
	if finished < 1 || finished > 2 {
		t.Errorf("%d listings of ended statements in 60 s after the first, want 1-2 (every 30 s)", finished)
	}
	// A new statement: adopted by the listing within a batch period.
	w.set("new-statement", model.StateRunning)
	h.run(1100*time.Millisecond, 100*time.Millisecond)
	if v := h.op("new-statement"); v == nil || v.State != model.StateRunning || v.LastPollOKAt.IsZero() {
		t.Fatalf("a new live statement was not adopted from the listing: %+v", v)
	}
	first := h.op(opID(1)).FirstSeenAt
	// opID(2) leaves history; opID(1) stays listed as finished.
	w.mu.Lock()
	w.hidden[opID(2)] = true
	w.mu.Unlock()
	h.run(retainFor+3*time.Minute, time.Second) // retired at LeakAfter after its end (openness read), then retained
	if v := h.op(opID(1)); !v.FirstSeenAt.Equal(first) {
		t.Errorf("an ended operation still listed was forgotten (or followed anew): %+v", v)
	}
	if slices.ContainsFunc(h.e.Snapshot().Operations, func(v *model.OperationView) bool { return v.StatementID == opID(2) }) {
		t.Errorf("an ended operation no longer listed was kept %v after it ended", retainFor+3*time.Minute)
	}
	for _, ev := range h.drain() {
		if ev.Kind == model.EventDiscovered && ev.StatementID == opID(1) && ev.At.After(h.clk.Now().Add(-retainFor)) {
			t.Errorf("%s discovered again at %v", opID(1), ev.At)
		}
	}
}

// Beyond listRowsPerSecond live statements the listing's period grows
// with them (12,000 live: a round every 3 s, not every second), every
// operation is still confirmed within a period with no per-operation
// fallback poll, and the freshness goal the header states follows.
func TestBatchListingPeriodGrowsWithLiveCount(t *testing.T) {
	w := &listingWorkspace{memWorkspace: newMemWorkspace(120), pageSize: 999}
	const n = 12000
	for i := range n {
		w.set(opID(i), model.StateRunning)
	}
	h := startEngine(t, Options{Discoverer: w, Status: w, Batch: w,
		Thresholds: model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: 20 * time.Second}})
	h.run(3*time.Second, 200*time.Millisecond)
	w.mu.Lock()
	p0 := w.pages
	w.mu.Unlock()
	_, b0, s0 := w.counts()
	h.run(24*time.Second, 200*time.Millisecond)
	w.mu.Lock()
	pages := w.pages - p0
	w.mu.Unlock()
	_, b, s := w.counts()
	period := time.Duration(n) * time.Second / listRowsPerSecond
	if rounds := float64(pages) / 13; rounds < 7 || rounds > 9 { // 13 pages a round, a round every 3 s
		t.Errorf("%.1f listing rounds in 24 s, want ~8 (one every %v)", rounds, period)
	}
	if b != b0 || s != s0 {
		t.Errorf("%d id lookups and %d per-operation polls while the listing showed every live operation", b-b0, s-s0)
	}
	now := h.clk.Now()
	for _, v := range h.e.Snapshot().Operations {
		if age := now.Sub(v.LastPollOKAt); age > period+200*time.Millisecond {
			t.Fatalf("%s last confirmed %v ago, want within a period (%v)", v.StatementID, age, period)
		}
	}
	if f := h.e.Health().Freshness; !f.Held || f.Goal != 2*period+time.Second {
		t.Errorf("freshness %+v, want held against %v", f, 2*period+time.Second)
	}
}

// A full discovery that reads few rows is not narrowed: on a quiet
// workspace a statement that ended between two listings shows at the next
// discovery, not FinishedEvery later.
func TestSmallDiscoveryStaysFull(t *testing.T) {
	w := &scopedWorkspace{listingWorkspace: &listingWorkspace{memWorkspace: newMemWorkspace(50), pageSize: 200}}
	for i := range 20 {
		w.set(opID(i), model.StateRunning)
	}
	h := startEngine(t, Options{Discoverer: w, Status: w, Batch: w, FinishedEvery: 30 * time.Second,
		Thresholds: model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: 2 * time.Minute}})
	h.run(2*time.Second, 100*time.Millisecond)
	w.set("quick", model.StateFinished) // started and ended between two listings
	h.run(5100*time.Millisecond, 100*time.Millisecond)
	if v := h.op("quick"); v.State != model.StateFinished {
		t.Errorf("quick statement: %+v", v)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, sc := range w.scopes {
		if sc.NoFinished {
			t.Errorf("discovery %d of 20 rows narrowed to %+v", i, sc)
		}
	}
}
