package proxy

import (
	"sort"
	"sync"
	"sync/atomic"
)

// counters are the proxy's own figures (admin API /v1/stats).
type counters struct {
	requests         atomic.Int64 // every client request
	untouched        atomic.Int64 // not a Thrift POST: forwarded without looking
	unknown          atomic.Int64 // a POST whose body is not a Thrift message
	otherCalls       atomic.Int64 // Thrift RPCs the proxy does not follow (forwarded, counted)
	undecodable      atomic.Int64 // a followed RPC whose request or answer did not decode
	tooLarge         atomic.Int64 // requests streamed without decoding (over 1 MiB)
	healed           atomic.Int64
	healFailed       atomic.Int64
	freshConns       atomic.Int64
	upstreamFailures atomic.Int64 // answered 502 by the proxy
	clientGone       atomic.Int64
	closesQueued     atomic.Int64
	closedByProxy    atomic.Int64
	abandonActions   atomic.Int64
	ownCalls         atomic.Int64
	refused          atomic.Int64 // answered 401/403 upstream: forwarded, never recorded
	refusedCalls     atomic.Int64 // answered with a Thrift error status: forwarded, not recorded
	mismatched       atomic.Int64 // a successful call naming a held GUID with another secret
	clientErrors     atomic.Int64 // the client's own framing error or slow body: answered 400
	limited          atomic.Int64 // refused with 503 by --max-conns or --max-conns-per-client
	waited           atomic.Int64 // waited in the queue for a slot
	drainRefused     atomic.Int64 // OpenSession refused while draining
	drainLeftOpen    atomic.Int64 // operations still open when the drain ended
	closeAnswered    atomic.Int64 // a client's retried close answered as a success for the proxy's
	unobserved       atomic.Int64 // answers in an encoding the proxy could not decode

	mu    sync.Mutex
	calls map[string]*atomic.Int64
}

func (c *counters) call(name string) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]*atomic.Int64{}
	}
	n := c.calls[name]
	if n == nil {
		if len(c.calls) >= 64 {
			name = "other"
			n = c.calls[name]
		}
		if n == nil {
			n = new(atomic.Int64)
			c.calls[name] = n
		}
	}
	c.mu.Unlock()
	n.Add(1)
}

// Stats is the JSON of GET /v1/stats.
type Stats struct {
	Requests         int64            `json:"requests"`
	Calls            map[string]int64 `json:"calls"`
	Untouched        int64            `json:"untouched"`
	NotThrift        int64            `json:"not_thrift"`
	OtherCalls       int64            `json:"other_calls"`
	Undecodable      int64            `json:"undecodable"`
	TooLarge         int64            `json:"too_large_to_observe"`
	Healed           int64            `json:"healed"`
	HealFailed       int64            `json:"heal_failed"`
	FreshConnections int64            `json:"fresh_connections"`
	UpstreamFailures int64            `json:"upstream_failures"`
	ClientsGone      int64            `json:"clients_gone"`
	ClosesQueued     int64            `json:"closes_queued"`
	ClosedByProxy    int64            `json:"closed_by_proxy"`
	AbandonActions   int64            `json:"abandon_actions"`
	OwnCalls         int64            `json:"own_calls"`
	Refused          int64            `json:"refused"`
	ErrorAnswers     int64            `json:"error_answers"`
	Mismatched       int64            `json:"mismatched_secret"`
	ClientErrors     int64            `json:"client_errors"`
	Limited          int64            `json:"limited"`
	Waited           int64            `json:"waited"`
	Draining         bool             `json:"draining"`
	DrainRefused     int64            `json:"drain_refused_sessions"`
	DrainLeftOpen    int64            `json:"drain_left_open"`
	CloseAnswered    int64            `json:"client_closes_answered"`
	Unobserved       int64            `json:"unobserved_answers"`
	Operations       int              `json:"operations"`
	OpenOperations   int              `json:"open_operations"`
	QueuedCloses     int              `json:"queued_closes"`
	Sessions         int              `json:"sessions"`
	Evicted          int64            `json:"evicted"`
	NotRecorded      int64            `json:"not_recorded"`
	RetryBudget      float64          `json:"retry_budget"`
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	c := &p.stats
	s := Stats{
		Requests: c.requests.Load(), Untouched: c.untouched.Load(), NotThrift: c.unknown.Load(),
		OtherCalls: c.otherCalls.Load(), Undecodable: c.undecodable.Load(), TooLarge: c.tooLarge.Load(),
		Healed: c.healed.Load(), HealFailed: c.healFailed.Load(), FreshConnections: c.freshConns.Load(),
		UpstreamFailures: c.upstreamFailures.Load(), ClientsGone: c.clientGone.Load(),
		ClosesQueued: c.closesQueued.Load(), ClosedByProxy: c.closedByProxy.Load(),
		AbandonActions: c.abandonActions.Load(), OwnCalls: c.ownCalls.Load(),
		Refused: c.refused.Load(), ErrorAnswers: c.refusedCalls.Load(), Mismatched: c.mismatched.Load(),
		ClientErrors: c.clientErrors.Load(), Limited: c.limited.Load(), Waited: c.waited.Load(),
		DrainRefused: c.drainRefused.Load(), DrainLeftOpen: c.drainLeftOpen.Load(), Draining: p.draining.Load(),
		CloseAnswered: c.closeAnswered.Load(), Unobserved: c.unobserved.Load(),
		Calls: map[string]int64{},
	}
	c.mu.Lock()
	names := make([]string, 0, len(c.calls))
	for k := range c.calls {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s.Calls[k] = c.calls[k].Load()
	}
	c.mu.Unlock()
	p.st.counts(&s)
	s.RetryBudget, _ = p.pol.Budget()
	return s
}
