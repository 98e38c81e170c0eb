package poller

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// CallStatusBatch is the engine's name for a batch confirmation: one
// query-history request filtered by statement ids (the request really
// made, as the simulator and the server count it).
const CallStatusBatch = "ListQueries"

// The batch status path (docs/retry-policy.md, "Status: batch first").
//
// Query history answers for every statement whatever protocol ran it and
// needs no handle secret, so it is the status source that is right on a
// strict server; one request confirms up to BatchLimit operations. Every
// BatchEvery the engine asks it about every live operation, in chunks,
// and takes each listed state as confirmed at the answer's arrival
// (LastPollOKAt). Per-operation calls remain for what only they tell:
//
//   - openness after the end (UNCLOSED): first asked when UNCLOSED could
//     start to matter (LeakAfter after completion), then every 10 s while
//     open;
//   - the owning client's activity (INACTIVE), when the status source
//     volunteers it: then live operations keep a per-operation poll too;
//   - a live operation the batches did not confirm for confirmGrace
//     (history lags, forgot it, or fails): polled on its own.
const (
	defaultBatchEvery = time.Second
	// activityProbes is how many newly discovered operations get one
	// per-operation poll to learn whether the status source reports
	// client activity (a real server does not; a proxy or the
	// simulator's extension may).
	activityProbes = 4
)

// batchState is the batch rounds' own state.
type batchState struct {
	queue   [][]sources.Ref // chunks of the current round not yet sent
	pending int             // chunks of the current round not yet answered
	calls   int64           // batch requests made
	rounds  uint64          // live listing rounds started (entry.listed)
	// buf is a page's rows, kept for the next round (listRound takes it).
	buf []sources.Discovered
	// activity: the status source reports client activity, so live
	// operations keep a per-operation poll.
	activity bool
	probes   int // activity probes made
}

// confirmGrace: a live operation not confirmed for this long is polled
// on its own.
func (e *Engine) confirmGrace() time.Duration { return 3 * e.batchPeriod() }

// listRowsPerSecond is the pace at which the batch listing reads live
// statements at most. Each row read is decoded, mapped and confirmed
// (~10 µs of CPU all told): up to 4,000 live statements the listing runs
// every BatchEvery; beyond, its period grows with them (2.5 s at 10,000,
// p95 staleness ~2.4 s against the goal of 3 s), so that following a
// busy workspace costs a bounded share of a core instead of one growing
// with it (docs/performance.md).
const listRowsPerSecond = 4000

// batchPeriod is the time between two batch rounds (e.mu held): BatchEvery,
// or longer when the live listing would read faster than
// listRowsPerSecond.
func (e *Engine) batchPeriod() time.Duration {
	p := e.o.BatchEvery
	if _, ok := e.o.Batch.(sources.LiveLister); ok {
		p = max(p, time.Duration(e.book.live())*time.Second/listRowsPerSecond)
	}
	return p
}

// batchMode reports whether live operations are confirmed in batches.
func (e *Engine) batchMode() bool { return e.o.Batch != nil }

// startBatch begins one round (called with e.mu held): with a
// sources.LiveLister, the listing first (a goroutine pages through it, one
// request per page), then id lookups of the live operations it did not
// show; without one, id lookups of every live operation. The loop
// dispatches id lookups like polls, within the same in-flight bound.
func (e *Engine) startBatch(spawn func(func(context.Context))) {
	if e.book.live() == 0 {
		return // nothing to confirm: no request
	}
	if ll, ok := e.o.Batch.(sources.LiveLister); ok {
		e.batch.pending = 1
		spawn(func(ctx context.Context) { e.listRound(ctx, ll) })
		return
	}
	e.queueBatch(0)
}

// maxListPages bounds one round's listing (pages of at least 100 rows,
// and a few more), so a listing that never ends (a server repeating
// cursors, a workspace far busier than dbxtop follows) stops; what it
// missed is looked up by id.
func (e *Engine) maxListPages(live int) int { return live/100 + 3 }

// listRound pages through the live listing, confirms what it lists and
// queues id lookups for the rest.
func (e *Engine) listRound(ctx context.Context, ll sources.LiveLister) {
	e.mu.Lock()
	pages := e.maxListPages(e.book.size())
	e.batch.rounds++
	round := e.batch.rounds // stamps what this listing showed (entry.listed)
	buf := e.batch.buf      // one page's rows, reused for the next page and round
	e.batch.buf = nil
	e.mu.Unlock()
	token := ""
	complete := false
	for page := 0; page < pages; page++ {
		type answer struct {
			rows []sources.Discovered
			next string
		}
		a, err := retry.Do(ctx, e.pol, retry.Call{Name: CallStatusBatch, Safe: true}, func(ctx context.Context) (answer, error) {
			t0 := e.clk.Now()
			m, next, err := ll.ListLive(ctx, token, buf)
			e.sched.lim.observe(e.clk.Now(), e.clk.Now().Sub(t0), err)
			return answer{m, next}, err
		})
		e.mu.Lock()
		e.batch.calls++
		if err != nil {
			if ctx.Err() == nil {
				e.recordWSError(CallStatusBatch, err)
			}
			e.mu.Unlock()
			break // what the listing missed is looked up by id
		}
		now := e.clk.Now()
		// The rows of statements not followed yet, compacted in place:
		// a row is moved only over rows already read.
		fresh := a.rows[:0]
		for i := range a.rows {
			d := &a.rows[i]
			id := discoveredID(d)
			if id == "" {
				continue
			}
			en := e.book.get(id)
			if en == nil {
				fresh = append(fresh, *d)
				continue
			}
			e.book.listed(en, round) // still listed: not forgotten (merge)
			if !en.retired {
				e.confirm(en, sources.ListedStatus(&d.Op), now)
			}
		}
		// A statement the listing shows first is adopted from it: with
		// the batch listing running, discovery does not list live
		// statements (sources.Scope.NoLive).
		for _, en := range e.adopt(fresh, now) {
			e.book.listed(en, round)
		}
		e.mu.Unlock()
		buf = a.rows[:cap(a.rows)]
		if a.next == "" || a.next == token {
			complete = a.next == ""
			break
		}
		token = a.next
	}
	clear(buf) // no statement's strings kept between rounds
	e.mu.Lock()
	defer e.mu.Unlock()
	e.batch.buf = buf[:0]
	if complete {
		delete(e.hs.wsErrs, CallStatusBatch)
	}
	e.batch.pending--
	e.queueBatch(round)
}

// queueBatch queues id lookups, in chunks of the source's batch limit,
// of every live operation the listing round did not show (0: no listing,
// every live operation). Called with e.mu held.
func (e *Engine) queueBatch(round uint64) {
	limit := max(1, e.o.Batch.BatchLimit())
	var chunk []sources.Ref
	e.book.eachLive(func(en *entry) {
		if !isLive(en) || en.deleted || (round != 0 && en.listed == round) {
			return
		}
		chunk = append(chunk, en.ref)
		if len(chunk) == limit {
			e.batch.queue = append(e.batch.queue, chunk)
			chunk = nil
		}
	})
	if len(chunk) > 0 {
		e.batch.queue = append(e.batch.queue, chunk)
	}
	e.batch.pending += len(e.batch.queue)
}

// runBatch runs the queued round to its end with at most par requests in
// flight (RunOnce).
func (e *Engine) runBatch(ctx context.Context, par int) {
	e.mu.Lock()
	live := e.book.countLive()
	e.mu.Unlock()
	if live == 0 {
		return // nothing to confirm: no request
	}
	if ll, ok := e.o.Batch.(sources.LiveLister); ok {
		e.mu.Lock()
		e.batch.pending = 1
		e.mu.Unlock()
		e.listRound(ctx, ll) // queues the id lookups of what it missed
	} else {
		e.mu.Lock()
		e.queueBatch(0)
		e.mu.Unlock()
	}
	e.mu.Lock()
	q := e.batch.queue
	e.batch.queue = nil
	e.mu.Unlock()
	sem := make(chan struct{}, max(1, par))
	var wg sync.WaitGroup
	for _, c := range q {
		sem <- struct{}{}
		e.mu.Lock()
		e.sched.inflight++
		e.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.confirmChunk(ctx, c)
			<-sem
		}()
	}
	wg.Wait()
}

// confirmChunk sends one batch request (counted in e.sched.inflight by the
// caller) and applies what it lists.
func (e *Engine) confirmChunk(ctx context.Context, refs []sources.Ref) {
	call := retry.Call{Name: CallStatusBatch, Safe: true}
	sts, err := retry.Do(ctx, e.pol, call, func(ctx context.Context) (map[string]sources.Status, error) {
		t0 := e.clk.Now()
		m, err := e.o.Batch.StatusBatch(ctx, refs)
		e.sched.lim.observe(e.clk.Now(), e.clk.Now().Sub(t0), err)
		return m, err
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sched.inflight--
	e.batch.pending--
	e.batch.calls++
	if err != nil {
		if ctx.Err() == nil {
			e.recordWSError(CallStatusBatch, err)
		}
		return // the operations' fallback polls come due on their own
	}
	delete(e.hs.wsErrs, CallStatusBatch)
	now := e.clk.Now()
	for _, r := range refs {
		st, ok := sts[r.StatementID]
		if !ok {
			continue
		}
		if en := e.book.get(r.StatementID); en != nil && !en.retired {
			e.confirm(en, st, now)
		}
	}
}

// confirm applies a state read from query history (a batch or discovery
// listing). History may lag: it never takes an operation back from a
// terminal state, and such an answer confirms nothing.
func (e *Engine) confirm(en *entry, st sources.Status, now time.Time) {
	if st.State == "" || (en.op.State.Terminal() && !st.State.Terminal()) {
		return
	}
	// Only the execution facts: openness and client activity are not in
	// query history.
	st.Open, st.ClientLastActivity = nil, nil
	wasLive := !en.op.State.Terminal()
	e.applyStatus(en, st, now)
	if en.retired || en.polling {
		return
	}
	// A confirmation replaces only the fallback poll of a live operation.
	// It never postpones a poll for what history cannot tell: an activity
	// probe, the openness of an ended operation, the client's activity.
	if en.idx >= 0 {
		ended := en.op.State.Terminal()
		if en.probe || (ended && !wasLive) || (!ended && e.batch.activity) {
			return
		}
	}
	e.scheduleNext(en, now, nil)
}

// scheduleNext sets en's next per-operation poll after an answer (err is
// the failed poll's error, nil after a success or a confirmation).
func (e *Engine) scheduleNext(en *entry, now time.Time, err error) {
	op := &en.op
	if e.book.pastOpenWindow(en, now) {
		e.retireUnknown(en, now)
		return
	}
	wait := pollInterval(op, now, e.pol.Rand())
	rate := 1 / wait.Seconds()
	if e.batchMode() && err == nil {
		switch {
		case op.State.Terminal():
			// Openness matters from LeakAfter after the end (UNCLOSED);
			// before that its answer would change no flag. (An adopted or
			// queued operation is dbxtop's to close: polled as before.)
			if !en.queued && !op.Adopted && en.terminal {
				if at := unstamp(en.terminalAt).Add(e.o.Thresholds.LeakAfter); at.After(now.Add(wait)) {
					wait, rate = at.Sub(now), 0
				}
			}
		case e.batch.activity:
			// The source reports client activity: keep polling for it.
		default:
			wait, rate = e.confirmGrace(), 0
		}
	}
	if w, ok := e.book.nextAsk(en, now, err); ok {
		// Jittered upwards only: after the bound, never more than one ask
		// per openAskEvery.
		wait = time.Duration(float64(w) * (1 + pollJitter*e.pol.Rand()))
		rate = 1 / max(wait.Seconds(), 1)
	}
	var he *sources.HTTPError
	if err != nil && errors.As(err, &he) && he.RetryAfter > wait {
		// A server that asked for more time than the policy would wait
		// gets it before the next poll too (bounded, so the operation is
		// not lost).
		wait = min(he.RetryAfter, maxServerWait)
	}
	e.sched.setRate(en, rate)
	e.sched.at(en, now.Add(wait))
}

// demand is the expected calls per second: per-operation polls plus the
// batch requests of one round per BatchEvery.
func (e *Engine) demand() float64 {
	d := e.sched.rateSum
	if e.batchMode() {
		live := e.book.live()
		limit := max(1, e.o.Batch.BatchLimit())
		if _, ok := e.o.Batch.(sources.LiveLister); ok {
			limit = 999 // pages of the listing; id lookups only for what it missed
		}
		d += math.Ceil(float64(live)/float64(limit)) / e.batchPeriod().Seconds()
	}
	return d
}

func (e *Engine) budgetShare() float64 {
	avail, capa := e.pol.Budget()
	if capa <= 0 {
		return 1
	}
	return avail / capa
}

// freshnessGoal is the p95 staleness the schedule aims at: the
// long-running poll interval's (3 s) per-operation, or two batch periods
// plus a second with batches.
func (e *Engine) freshnessGoal() time.Duration {
	if e.batchMode() {
		return 2*e.batchPeriod() + time.Second
	}
	return 3 * time.Second
}

// evalFreshness measures the p95 time since live operations were last
// confirmed and says why the goal is missed when it is. Called with e.mu
// held.
func (e *Engine) evalFreshness(now time.Time) {
	// A sample of at most 2,000, spread evenly over the live operations
	// (in the order they were followed), so old and new ones both count.
	ages := make([]time.Duration, 0, 2001)
	live := e.book.sampleLive(2000, func(en *entry) {
		at := en.op.LastPollOKAt
		if at.IsZero() {
			at = en.op.FirstSeenAt
		}
		ages = append(ages, now.Sub(at))
	})
	f := Freshness{Goal: e.freshnessGoal(), Live: live, Held: true, InFlight: e.sched.inflight}
	f.Demand = e.demand()
	if len(ages) > 0 {
		slices.Sort(ages)
		f.P95 = ages[int(math.Ceil(0.95*float64(len(ages))))-1]
	}
	if f.P95 > f.Goal {
		f.Held = false
		c := e.sched.lim.capacity(now)
		avail, capa := e.pol.Budget()
		switch {
		case c.Throttled:
			f.Reason = "throttled: the server answered 429/503; concurrency cut to " + itoa(c.Cap)
		case capa > 0 && avail < capa/5:
			f.Reason = "retry budget low: calls fail and retries are rationed"
		case c.Latency > 0 && f.Demand*c.Latency.Seconds() > float64(c.Ceiling):
			f.Reason = "latency " + c.Latency.Round(time.Millisecond).String() + " × " + itoa(int(f.Demand)) +
				" calls/s needs more than the ceiling of " + itoa(c.Ceiling) + " calls in flight"
		default:
			f.Reason = "calls fail or answer late (latency " + c.Latency.Round(time.Millisecond).String() + ")"
		}
	}
	e.hs.fresh = f
}

func itoa(n int) string { return strconv.Itoa(n) }

// callFreshness names the snapshot's error entry about freshness.
const callFreshness = "Freshness"

// freshnessError is the workspace error entry that says the goal is not
// held, and why (nil when held).
func (e *Engine) freshnessError() *model.ErrorInfo {
	f := e.hs.fresh
	if f.Held || f.Goal == 0 {
		return nil
	}
	return &model.ErrorInfo{Kind: model.KindUnavailable, Call: callFreshness, Message: f.String()}
}
