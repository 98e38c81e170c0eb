package poller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// LearnedLimits keeps the row limits learned from RESOURCE_EXHAUSTED per
// endpoint (capstore persists them; nil keeps them in the engine's
// memory). SetLearned with nil forgets; its error is for the caller's
// information only (the store reports its own problems once).
type LearnedLimits interface {
	Learned(endpoint string) *model.LearnedLimit
	SetLearned(endpoint string, l *model.LearnedLimit) error
}

// capacityState is the capacity rounds' own state.
type capacityState struct {
	eps     []model.Endpoint // the last listing's endpoints
	running bool
	mem     memLearned // Learned when Options.Learned is nil
}

// memLearned is the in-memory LearnedLimits of an engine without a store.
type memLearned map[string]model.LearnedLimit

func (m memLearned) Learned(ep string) *model.LearnedLimit {
	if l, ok := m[ep]; ok {
		return &l
	}
	return nil
}

func (m memLearned) SetLearned(ep string, l *model.LearnedLimit) error {
	if l == nil {
		delete(m, ep)
	} else {
		m[ep] = *l
	}
	return nil
}

// capacityRound lists endpoints (and probes them when asked), merges the
// result with the previous samples, learns or forgets row limits from the
// probe's answers, and resolves each endpoint's row limit.
func (e *Engine) capacityRound(ctx context.Context) {
	defer func() {
		e.mu.Lock()
		e.caps.running = false
		e.mu.Unlock()
	}()
	// Each request of the listing goes through the policy on its own.
	eps, err := e.o.Capacity.Endpoints(ctx, e.retry)
	if err != nil {
		if ctx.Err() == nil {
			e.listingFailed(err)
		}
		return
	}
	probes := e.probe(ctx, eps)
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.hs.wsErrs, CallCapacity)
	now := e.clk.Now()
	prev := make(map[string]model.Endpoint, len(e.caps.eps))
	for _, ep := range e.caps.eps {
		prev[ep.Name] = ep
	}
	for i := range eps {
		old, known := prev[eps[i].Name]
		e.foldEndpoint(ctx, &eps[i], old, known, probes[i], now)
	}
	e.caps.eps = eps
}

// listingFailed keeps the last known endpoints, marked with the error
// (their observed_at gives their age), until a listing succeeds.
func (e *Engine) listingFailed(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	info := listingErrorInfo(err)
	e.hs.wsErrs[CallCapacity] = *info
	e.hs.lastErr = info
	for i := range e.caps.eps {
		e.caps.eps[i].ListingError = info
	}
}

// probe sends the opt-in empty upsert to each endpoint; the errors line up
// with eps (all nil without --capacity-probe).
func (e *Engine) probe(ctx context.Context, eps []model.Endpoint) []error {
	probes := make([]error, len(eps))
	if !e.o.Probe {
		return probes
	}
	for i, ep := range eps {
		// Unsafe call: retried only when it provably never reached the
		// server; RESOURCE_EXHAUSTED comes back after one request.
		probes[i] = e.pol.Do(ctx, retry.Call{Name: CallProbe, Safe: false, OpID: ep.Name}, func(ctx context.Context) error {
			return e.o.Capacity.Probe(ctx, ep.Name)
		})
	}
	return probes
}

// foldEndpoint merges one listed endpoint with what the last round knew
// (old, if known) and its probe's answer, and emits an event when it is
// new or its exhaustion changed. e.mu is held.
func (e *Engine) foldEndpoint(ctx context.Context, ep *model.Endpoint, old model.Endpoint, known bool, perr error, now time.Time) {
	rows := ep.TotalRows()
	ep.Samples = model.AppendSample(old.Samples, model.Sample{At: now, Rows: rows})
	ep.ObservedAt = now
	// A source that reads a proxy reports a client's refused write
	// itself (proxy.MergeCapacity): Exhausted, ExhaustedVia, LastError.
	refused := ep.Exhausted && ep.ExhaustedVia == model.LearnedViaProxy
	ep.Exhausted = false
	if errors.Is(perr, sources.ErrProbeSkipped) {
		if !known {
			e.out.emit(model.Event{At: now, Kind: model.EventCapacity, Endpoint: ep.Name, Message: perr.Error()})
		}
		perr = nil
	}
	if perr != nil && ctx.Err() == nil {
		ep.LastError = retry.ErrorInfoOf(perr)
		var he *sources.HTTPError
		// RESOURCE_EXHAUSTED: the endpoint is full. QUOTA_EXCEEDED (the
		// index quota) stays the last error: the model flags it as such.
		if errors.As(perr, &he) && he.ErrorCode == "RESOURCE_EXHAUSTED" {
			ep.Exhausted, ep.ExhaustedVia = true, model.LearnedViaProbe
		}
	} else if refused {
		ep.Exhausted = true
	} else if ep.LastError == nil && old.LastError != nil && !e.o.Probe && old.ExhaustedVia != model.LearnedViaProxy {
		ep.LastError, ep.Exhausted = old.LastError, old.Exhausted
	}
	e.learn(ep, rows, now)
	ep.ConfigLimit = e.o.RowLimits[ep.Name]
	*ep = ep.WithRowLimit()
	if !known || old.Exhausted != ep.Exhausted {
		msg := fmt.Sprintf("%s: %d rows", ep.Name, rows)
		ev := model.Event{At: now, Kind: model.EventCapacity, Endpoint: ep.Name, Message: msg}
		if ep.Exhausted {
			ev.Message += "; EXHAUSTED"
			if ep.LastError != nil {
				ev.Message += ": " + ep.LastError.Message
				ev.RequestID, ev.Err = ep.LastError.RequestID, ep.LastError
			}
		}
		e.out.emit(ev)
	}
}

// learn applies one round to the endpoint's learned limit: a refusal
// records the row count, rows above the figure forget it (docs/capacity.md).
// Caller holds e.mu.
func (e *Engine) learn(ep *model.Endpoint, rows int64, now time.Time) {
	store := e.o.Learned
	if store == nil {
		store = e.caps.mem
	}
	prev := store.Learned(ep.Name)
	rid := ""
	if ep.Exhausted && ep.LastError != nil {
		rid = ep.LastError.RequestID
	}
	l, out := model.UpdateLearned(prev, rows, ep.Exhausted, rid, ep.ExhaustedVia, now)
	ep.Learned = l
	var serr error
	switch out {
	case model.LearnNew:
		serr = store.SetLearned(ep.Name, l)
		e.out.emit(model.Event{At: now, Kind: model.EventCapacity, Endpoint: ep.Name, RequestID: rid,
			Message: fmt.Sprintf("%s: limit learned from RESOURCE_EXHAUSTED at %s rows", ep.Name, textfmt.Count(rows)) + learnedFrom(ep.ExhaustedVia)})
	case model.LearnForget:
		serr = store.SetLearned(ep.Name, nil)
		e.out.emit(model.Event{At: now, Kind: model.EventCapacity, Endpoint: ep.Name,
			Message: fmt.Sprintf("%s: holds %s rows, above the learned limit of %s: the limit is learned again at the next refusal",
				ep.Name, textfmt.Count(rows), textfmt.Count(prev.Rows))})
	}
	if serr != nil {
		// The limit is in effect; only its persistence failed.
		e.out.emit(model.Event{At: now, Kind: model.EventCapacity, Endpoint: ep.Name,
			Message: fmt.Sprintf("%s: learned limit kept in memory only (state file: %v)", ep.Name, serr)})
	}
}

// learnedFrom says whose refused write taught a limit, for its event.
func learnedFrom(via string) string {
	switch via {
	case model.LearnedViaProxy:
		return " (a client's upsert seen by dbxtop proxy)"
	case model.LearnedViaProbe:
		return " (dbxtop's probe)"
	}
	return ""
}
