package poller

import (
	"sort"

	"github.com/dbxtop/dbxtop/model"
)

// Snapshot is a consistent copy of everything observed, with flags
// evaluated at Clock.Now().
func (e *Engine) Snapshot() model.Snapshot {
	s := e.snapshot()
	s.Clients = model.AggregateClients(s.Operations, s.GeneratedAt, e.o.ClientsWindow)
	return s
}

// snapshot is Snapshot without clients[].
func (e *Engine) snapshot() model.Snapshot {
	e.mu.Lock()
	now := e.clk.Now()
	eps := make([]model.Endpoint, len(e.caps.eps))
	for i, ep := range e.caps.eps {
		ep.Indexes = append([]model.Index(nil), ep.Indexes...)
		ep.Samples = append([]model.Sample(nil), ep.Samples...)
		eps[i] = ep
	}
	errs := make([]model.ErrorInfo, 0, len(e.hs.wsErrs)+1)
	for _, v := range e.hs.wsErrs {
		errs = append(errs, v)
	}
	if fe := e.freshnessError(); fe != nil {
		errs = append(errs, *fe)
	}
	ws := e.o.Workspace
	ws.Listing = e.disc.listing
	ws.NotFollowed = e.book.notFollowed()
	e.mu.Unlock()
	if e.o.Proxies != nil {
		ws.Proxies = e.o.Proxies.ProxyStatuses()
	}
	views := e.book.viewsAt(now)
	sort.Slice(errs, func(i, j int) bool { return errs[i].Call < errs[j].Call })
	return model.SnapshotOfViews(now, ws, views, eps, uniqueErrors(errs))
}

// evalFlags measures freshness (scheduled: Run's schedule, whose goal
// it is), compares the flags of the operations whose view may have
// changed and of every endpoint with those last compared, and emits
// raised and cleared events (a severity change counts as raised).
func (e *Engine) evalFlags(scheduled bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clk.Now()
	if scheduled {
		e.evalFreshness(now)
	}
	e.book.compare(now, e.caps.eps, e.out.emit)
}

// Health is the poller's own state: what it follows, its budget and its
// last error.
func (e *Engine) Health() Health {
	avail, capa := e.pol.Budget()
	retries, giveUps := e.pol.Counts()
	e.mu.Lock()
	defer e.mu.Unlock()
	h := Health{InFlight: e.sched.inflight, BudgetAvailable: avail, BudgetCapacity: capa,
		Polls: e.hs.polls, Retries: retries, GiveUps: giveUps,
		EventsDropped: e.out.dropped.Load(), BatchCalls: e.batch.calls,
		LastDiscovery: e.disc.last, DiscoveryFailures: e.disc.fails,
		DiscoveryUp: !e.disc.last.IsZero() && !e.disc.failed,
		Capacity:    e.sched.lim.capacity(e.clk.Now()), Freshness: e.hs.fresh}
	h.Capacity.Limit = e.sched.lim.limit(e.sched.rateSum, avail/max(capa, 1))
	h.Followed = e.book.followed()
	h.NotFollowed = e.book.notFollowed()
	if e.hs.lastErr != nil {
		le := *e.hs.lastErr
		h.LastError = &le
	}
	if e.hs.lastRetry != nil {
		lr := *e.hs.lastRetry
		h.LastRetry = &lr
	}
	return h
}

var trueRef, falseRef = true, false

// boolRef points at a shared true or false: snapshots are read-only.
func boolRef(v bool) *bool {
	if v {
		return &trueRef
	}
	return &falseRef
}

// uniqueErrors drops an error that repeats one before it (same kind,
// call, code and message): one failing source, such as the proxy, seen by
// several of the engine's calls is one problem in errors[].
func uniqueErrors(errs []model.ErrorInfo) []model.ErrorInfo {
	type key struct {
		kind                model.ErrorKind
		call, code, message string
	}
	seen := make(map[key]bool, len(errs))
	out := errs[:0]
	for _, e := range errs {
		k := key{e.Kind, e.Call, e.ErrorCode, e.Message}
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}
