package retry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Limit bounds one call: attempts (the first one included) and the total
// elapsed time from the first attempt to the start of the last.
type Limit struct {
	Attempts int
	Elapsed  time.Duration
	// Attempt bounds one attempt; 0 → PolicyOptions.AttemptTimeout. A
	// discovery attempt reads several pages and gets more time.
	Attempt time.Duration
}

// PolicyOptions configures a Policy. The zero value means the documented
// defaults (docs/retry-policy.md).
type PolicyOptions struct {
	Base          time.Duration // first backoff ceiling; 0 → 250ms
	Cap           time.Duration // backoff ceiling cap; 0 → 8s
	RetryAfterCap time.Duration // longest server-requested wait honoured; 0 → 30s
	// AttemptTimeout bounds one attempt (a hung request); 0 → 10s.
	AttemptTimeout time.Duration
	// Default is the limit of calls not in Limits; zero → 4 attempts / 20s.
	Default Limit
	// Limits overrides the limit per call name (zero fields → Default's).
	Limits map[string]Limit

	BudgetCapacity float64 // 0 → 500 tokens
	RetryCost      float64 // 0 → 5
	TimeoutCost    float64 // 0 → 10
	SuccessRefund  float64 // 0 → 1

	Clock Clock
	// Idle transports whose idle connections are dropped before a retry
	// that follows a transport error.
	Idle []sources.IdleCloser
	// Observe, if set, is told of every retry and give-up. It must not block.
	Observe func(Report)
	// Done, if set, is told of every call's end: its attempts and its
	// final error (nil on success, else the *GiveUpError). It must not
	// block. `serve` counts calls by outcome with it.
	Done func(call Call, attempts int, err error)
	// Rand returns [0,1) for jitter; nil → math/rand/v2.
	Rand func() float64
	// Waiting, if set, is told when a backoff wait starts (tests settle
	// on it). It must not block.
	Waiting func()
}

// listingLimit is the limit of one request of a paginated listing.
var listingLimit = Limit{Attempts: 12, Elapsed: 15 * time.Second}

// DefaultLimits are the per-call limits applied when PolicyOptions.Limits
// does not name a call.
var DefaultLimits = map[string]Limit{
	"GetOperationStatus": {Attempts: 4, Elapsed: 20 * time.Second},
	"GetStatement":       {Attempts: 4, Elapsed: 20 * time.Second},
	"CloseOperation":     {Attempts: 3, Elapsed: 15 * time.Second},
	"CloseStatement":     {Attempts: 3, Elapsed: 15 * time.Second},
	"CancelOperation":    {Attempts: 3, Elapsed: 15 * time.Second},
	"CancelExecution":    {Attempts: 3, Elapsed: 15 * time.Second},
	// Each request of a listing (one page) is retried on its own, for as
	// long as its elapsed limit allows: pages are cheap, idempotent GETs,
	// a page given up loses the listing's rest, and the budget bounds the
	// total. Under a 50 % throttle with Retry-After: 1 a page then fails
	// with probability 2^-12 instead of 1/8 at 3 attempts; an unreachable
	// host is reported after about 8 s (6 attempts: the next backoff would
	// pass 15 s).
	"ListQueries":    listingLimit,
	"ListWarehouses": listingLimit,
	"ListEndpoints":  listingLimit,
	"ListIndexes":    listingLimit,
	"GetIndex":       listingLimit,
	// The probe exists to get RESOURCE_EXHAUSTED in one request.
	"UpsertDataVectorIndex": {Attempts: 2, Elapsed: 5 * time.Second},
	// One read of a proxy's facts per refresh: the next refresh is the
	// retry. Retrying within one would hold the discovery of every other
	// proxy (they are read together) and delay showing this one's facts
	// as unknown (docs/proxy.md "Many proxies, one view").
	"ProxyOperations": {Attempts: 1, Elapsed: 10 * time.Second},
}

func (o PolicyOptions) withDefaults() PolicyOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	deff := func(f *float64, v float64) {
		if *f <= 0 {
			*f = v
		}
	}
	def(&o.Base, 250*time.Millisecond)
	def(&o.Cap, 8*time.Second)
	def(&o.RetryAfterCap, 30*time.Second)
	def(&o.AttemptTimeout, 10*time.Second)
	if o.Default.Attempts <= 0 {
		o.Default.Attempts = 4
	}
	def(&o.Default.Elapsed, 20*time.Second)
	deff(&o.BudgetCapacity, 500)
	deff(&o.RetryCost, 5)
	deff(&o.TimeoutCost, 10)
	deff(&o.SuccessRefund, 1)
	o.Clock = ClockOr(o.Clock)
	if o.Rand == nil {
		o.Rand = randFloat
	}
	return o
}

// Report tells the observer about one retry (GaveUp nil) or one give-up.
type Report struct {
	Call     Call
	Attempt  int // the attempt that failed
	Err      error
	Decision Decision
	Wait     time.Duration // before the next attempt (retries only)
	GaveUp   *GiveUpError
}

// Policy runs calls with classification, backoff, per-call limits and a
// shared retry budget. Safe for concurrent use; one per workspace.
type Policy struct {
	o      PolicyOptions
	budget *budget

	mu   sync.Mutex
	idle []sources.IdleCloser

	retries, giveUps atomic.Int64
	// Backoff waits in progress and when each ends (tests settle on it).
	sleepMu  sync.Mutex
	sleepers map[uint64]time.Time
	sleepSeq uint64
}

// NewPolicy builds a policy; the zero PolicyOptions gives the defaults.
func NewPolicy(o PolicyOptions) *Policy {
	o = o.withDefaults()
	return &Policy{o: o, budget: newBudget(o), idle: o.Idle}
}

// Budget returns the retry budget's available tokens and capacity.
func (p *Policy) Budget() (available, capacity float64) {
	return p.budget.available(), p.budget.capacity
}

// Counts returns the retries made and the calls given up since the
// policy was built (a canceled call or a gone handle is not a give-up).
func (p *Policy) Counts() (retries, giveUps int64) {
	return p.retries.Load(), p.giveUps.Load()
}

// Rand draws the policy's jitter in [0,1): the close queue waits with it
// (CloseRetryWait).
func (p *Policy) Rand() float64 { return p.o.Rand() }

func (p *Policy) limit(name string) Limit {
	l, ok := p.o.Limits[name]
	if !ok {
		l, ok = DefaultLimits[name]
	}
	if !ok {
		l = p.o.Default
	}
	if l.Attempts <= 0 {
		l.Attempts = p.o.Default.Attempts
	}
	if l.Elapsed <= 0 {
		l.Elapsed = p.o.Default.Elapsed
	}
	if l.Attempt <= 0 {
		l.Attempt = p.o.AttemptTimeout
	}
	return l
}

// Do runs fn until it succeeds or the policy gives up; the error is then a
// *GiveUpError wrapping the last cause.
func (p *Policy) Do(ctx context.Context, call Call, fn func(ctx context.Context) error) error {
	attempts, err := p.do(ctx, call, fn)
	if p.o.Done != nil {
		p.o.Done(call, attempts, err)
	}
	return err
}

// Do is the generic form of Policy.Do for calls that return a value.
func Do[T any](ctx context.Context, p *Policy, call Call, fn func(context.Context) (T, error)) (T, error) {
	var out T
	err := p.Do(ctx, call, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			out = v
		}
		return err
	})
	return out, err
}

// DoAttempts is Do that also returns the number of attempts made, and
// does not tell PolicyOptions.Done: the close queue records each close's
// attempts on the operation itself.
func (p *Policy) DoAttempts(ctx context.Context, call Call, fn func(ctx context.Context) error) (int, error) {
	return p.do(ctx, call, fn)
}

// do also returns the number of attempts made.
func (p *Policy) do(ctx context.Context, call Call, fn func(ctx context.Context) error) (int, error) {
	clk := p.o.Clock
	start := clk.Now()
	lim := p.limit(call.Name)
	var paid float64
	fresh := false
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return attempt - 1, p.giveUp(call, attempt-1, clk.Now().Sub(start), Decision{Kind: model.KindCanceled, Reason: "canceled"}, err, false)
		}
		// A real-time deadline per attempt: a hung server must not hold a
		// poll forever.
		actx, cancel := context.WithTimeout(ctx, lim.Attempt)
		if fresh {
			actx = sources.WithFreshConn(actx)
		}
		err := fn(actx)
		attemptTimedOut := actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if err == nil {
			p.budget.success(paid)
			return attempt, nil
		}
		elapsed := clk.Now().Sub(start)
		var d Decision
		switch {
		case ctx.Err() != nil:
			return attempt, p.giveUp(call, attempt, elapsed, Decision{Kind: model.KindCanceled, Reason: "canceled"}, err, false)
		case attemptTimedOut:
			d = safeOnly(call, Decision{Kind: model.KindTransport, FreshConn: true, Timeout: true,
				Reason: fmt.Sprintf("no answer within the %s attempt timeout", lim.Attempt)})
			err = &attemptTimeoutError{after: lim.Attempt, err: err}
		default:
			d = Classify(call, err)
		}
		if !d.Retry {
			return attempt, p.giveUp(call, attempt, elapsed, d, err, d.Kind != model.KindCanceled)
		}
		if attempt >= lim.Attempts {
			d.Reason = fmt.Sprintf("attempt limit %d reached", lim.Attempts)
			return attempt, p.giveUp(call, attempt, elapsed, d, err, false)
		}
		wait := equalJitter(ceiling(p.o.Base, p.o.Cap, attempt), p.o.Rand())
		if d.Wait > 0 {
			if d.Wait > p.o.RetryAfterCap {
				d.Reason = fmt.Sprintf("server asked to wait %s, more than the %s cap", d.Wait, p.o.RetryAfterCap)
				return attempt, p.giveUp(call, attempt, elapsed, d, err, false)
			}
			wait = d.Wait
		}
		if elapsed+wait > lim.Elapsed {
			d.Reason = fmt.Sprintf("next retry in %s would pass the %s elapsed limit", textfmt.Elapsed(wait), lim.Elapsed)
			return attempt, p.giveUp(call, attempt, elapsed, d, err, false)
		}
		cost, ok := p.budget.take(d.Timeout)
		if !ok {
			d.Reason = "retry budget exhausted"
			return attempt, p.giveUp(call, attempt, elapsed, d, err, false)
		}
		paid = cost
		p.retries.Add(1)
		if p.o.Observe != nil {
			p.o.Observe(Report{Call: call, Attempt: attempt, Err: err, Decision: d, Wait: wait})
		}
		if !p.sleep(ctx, wait) {
			return attempt, p.giveUp(call, attempt, clk.Now().Sub(start), Decision{Kind: model.KindCanceled, Reason: "canceled while waiting to retry"}, err, false)
		}
		fresh = d.FreshConn
		if d.FreshConn {
			// Right before the retry, not right after the failure: a
			// connection returned to the pool during the backoff may be
			// as stale as the one that failed.
			p.closeIdle()
		}
	}
}

func (p *Policy) sleep(ctx context.Context, d time.Duration) bool {
	ch := p.o.Clock.After(d)
	// Recorded after After: the recorded end is never earlier than the
	// timer's, so a test never waits for a timer that cannot fire.
	p.sleepMu.Lock()
	if p.sleepers == nil {
		p.sleepers = map[uint64]time.Time{}
	}
	p.sleepSeq++
	id := p.sleepSeq
	p.sleepers[id] = p.o.Clock.Now().Add(d)
	p.sleepMu.Unlock()
	defer func() {
		p.sleepMu.Lock()
		delete(p.sleepers, id)
		p.sleepMu.Unlock()
	}()
	if p.o.Waiting != nil {
		p.o.Waiting()
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *Policy) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	for _, c := range idle {
		c.CloseIdleConnections()
	}
}

func (p *Policy) giveUp(call Call, attempts int, elapsed time.Duration, d Decision, last error, permanent bool) error {
	g := &GiveUpError{Call: call, Attempts: attempts, Elapsed: elapsed, Kind: d.Kind,
		Reason: d.Reason, Last: last, Permanent: permanent}
	if g.Kind == "" {
		g.Kind = model.KindPermanent
	}
	// A canceled call did not give up, and "the server no longer has this
	// operation" is an answer (the engine marks it gone), not a failure.
	if g.Kind != model.KindCanceled && !errors.Is(last, sources.ErrHandleGone) {
		p.giveUps.Add(1)
	}
	if p.o.Observe != nil {
		p.o.Observe(Report{Call: call, Attempt: attempts, Err: last, Decision: d, GaveUp: g})
	}
	return g
}

// attemptTimeoutError says that the policy's own per-attempt deadline
// passed (rather than the caller's), keeping the cause.
type attemptTimeoutError struct {
	after time.Duration
	err   error
}

func (e *attemptTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %s: %v", e.after, e.err)
}
func (e *attemptTimeoutError) Unwrap() error { return e.err }
func (e *attemptTimeoutError) Timeout() bool { return true }

// SleepingUntil counts backoff waits in progress and whether all of them
// end after t (none is due to wake).
func (p *Policy) SleepingUntil(t time.Time) (n int, allAfter bool) {
	p.sleepMu.Lock()
	defer p.sleepMu.Unlock()
	allAfter = true
	for _, w := range p.sleepers {
		if !w.After(t) {
			allAfter = false
		}
	}
	return len(p.sleepers), allAfter
}
