package poller

import (
	"context"
	"errors"
	"fmt"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// maxSamples bounds each endpoint's capacity history (growth rate, ETA).
const maxSamples = 120

// capacityRound lists endpoints (and probes them when asked) and merges
// the result with the previous samples.
func (e *Engine) capacityRound(ctx context.Context) {
	defer func() {
		e.mu.Lock()
		e.capRunning = false
		e.mu.Unlock()
	}()
	eps, err := Do(ctx, e.pol, Call{Name: CallCapacity, Safe: true}, e.o.Capacity.Endpoints)
	if err != nil {
		if ctx.Err() == nil {
			e.mu.Lock()
			e.recordWSError(CallCapacity, err)
			e.mu.Unlock()
		}
		return
	}
	probes := make([]error, len(eps))
	if e.o.Probe {
		for i, ep := range eps {
			// Unsafe call: retried only when it provably never reached the
			// server; RESOURCE_EXHAUSTED comes back after one request.
			probes[i] = e.pol.Do(ctx, Call{Name: CallProbe, Safe: false, OpID: ep.Name}, func(ctx context.Context) error {
				return e.o.Capacity.Probe(ctx, ep.Name)
			})
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.wsErrs, CallCapacity)
	now := e.clk.Now()
	prev := make(map[string]model.Endpoint, len(e.eps))
	for _, ep := range e.eps {
		prev[ep.Name] = ep
	}
	for i := range eps {
		ep := &eps[i]
		var rows int64
		for _, ix := range ep.Indexes {
			rows += ix.Rows
		}
		old, known := prev[ep.Name]
		ep.Samples = append(append([]model.Sample(nil), old.Samples...), model.Sample{At: now, Rows: rows})
		if len(ep.Samples) > maxSamples {
			ep.Samples = ep.Samples[len(ep.Samples)-maxSamples:]
		}
		ep.ObservedAt = now
		if perr := probes[i]; perr != nil && ctx.Err() == nil {
			info := ErrorInfoOf(perr)
			ep.LastError = info
			var he *sources.HTTPError
			if errors.As(perr, &he) && (he.ErrorCode == "RESOURCE_EXHAUSTED" || he.ErrorCode == "QUOTA_EXCEEDED") {
				ep.Exhausted = true
			}
		} else if ep.LastError == nil && old.LastError != nil && !e.o.Probe {
			ep.LastError = old.LastError
		}
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
			e.emit(ev)
		}
	}
	e.eps = eps
}
