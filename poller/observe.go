package poller

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// emit publishes ev without ever blocking: when the buffer is full the
// oldest event is dropped (and counted) to make room.
func (e *Engine) emit(ev model.Event) {
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	sendDropOldest(e.events, ev, &e.dropped)
}

// sendDropOldest puts ev on ch without blocking, dropping (and counting)
// the oldest buffered event when ch is full: a slow reader loses old news,
// never stalls a poller. Callers serialise their sends.
func sendDropOldest(ch chan model.Event, ev model.Event, dropped *atomic.Int64) {
	for {
		select {
		case ch <- ev:
			return
		default:
		}
		select {
		case <-ch:
			dropped.Add(1)
		default:
		}
	}
}

// observe turns the policy's reports into events and per-operation counters.
func (e *Engine) observe(r Report) {
	info := ErrorInfoOf(r.Err)
	if r.GaveUp != nil {
		info = ErrorInfoOf(r.GaveUp)
	}
	e.mu.Lock()
	now := e.clk.Now()
	en := e.ops[r.Call.OpID]
	if r.GaveUp == nil && en != nil && r.Call.Name == CallStatus {
		e.touch(en)
		en.op.Poll.Retries++
	}
	e.mu.Unlock()
	ev := model.Event{At: now, StatementID: r.Call.OpID, Call: r.Call.Name, Err: info, RequestID: info.RequestID}
	if en == nil {
		ev.StatementID = ""
		if r.Call.Name == CallProbe {
			ev.Endpoint = r.Call.OpID
		}
	}
	if r.GaveUp != nil {
		if r.GaveUp.Kind == model.KindCanceled {
			return // shutdown or the caller's choice, not news
		}
		if errors.Is(r.Err, sources.ErrHandleGone) {
			return // an answer, reported by the caller as gone or closed
		}
		if r.Call.Name == CallProbe && r.GaveUp.Kind == model.KindPermanent {
			// A full endpoint answering the probe is the probe's purpose:
			// the capacity round reports it once, when it changes.
			return
		}
		ev.Kind, ev.Message = model.EventGiveUp, r.GaveUp.Error()
		e.logf("%s", ev.Message)
	} else {
		ev.Kind = model.EventRetry
		ev.Message = fmt.Sprintf("attempt %d failed (%s); retrying in %s: %s", r.Attempt, r.Decision.Reason, textfmt.Elapsed(r.Wait), describe(r.Err))
		e.logf("%s %s: %s", r.Call.Name, r.Call.OpID, ev.Message)
	}
	e.emit(ev)
}

// Snapshot is a consistent copy of everything observed, with flags
// evaluated at Clock.Now().
func (e *Engine) Snapshot() model.Snapshot {
	s := e.SnapshotWithoutClients()
	s.Clients = e.Clients(s)
	return s
}

// SnapshotWithoutClients is Snapshot with clients[] left out (nil): their
// aggregation reads every operation again, a twentieth of the process's
// CPU at 10,000 live, so the TUI asks for them only while it shows them
// (Clients).
func (e *Engine) SnapshotWithoutClients() model.Snapshot {
	e.mu.Lock()
	now := e.clk.Now()
	ens := e.ordered() // kept in order as operations arrive: no sort here
	// Views are shared with earlier snapshots and re-evaluated only when
	// their operation changed or a flag deadline or running figure is
	// due (model.ViewCache): a refresh copies pointers, not operations.
	views := make([]*model.OperationView, len(ens))
	for i, en := range ens {
		views[i] = e.viewOf(en, now)
		if verifyViews && i > 0 && entryCmp(ens[i-1], en) >= 0 {
			msg := fmt.Sprintf("poller: operations out of statement id order: %s before %s", ens[i-1].op.StatementID, en.op.StatementID)
			viewViolation.CompareAndSwap(nil, &msg)
		}
	}
	eps := make([]model.Endpoint, len(e.eps))
	for i, ep := range e.eps {
		ep.Indexes = append([]model.Index(nil), ep.Indexes...)
		ep.Samples = append([]model.Sample(nil), ep.Samples...)
		eps[i] = ep
	}
	errs := make([]model.ErrorInfo, 0, len(e.wsErrs)+1)
	for _, v := range e.wsErrs {
		errs = append(errs, v)
	}
	if fe := e.freshnessError(); fe != nil {
		errs = append(errs, *fe)
	}
	ws := e.o.Workspace
	ws.Listing = e.listing
	e.mu.Unlock()
	sort.Slice(errs, func(i, j int) bool { return errs[i].Call < errs[j].Call })
	return model.SnapshotOfIDOrdered(now, ws, views, eps, uniqueErrors(errs)) // e.ordered(): by statement id
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

// Clients is the clients[] of s, one of this engine's snapshots, as
// Snapshot aggregates it.
func (e *Engine) Clients(s model.Snapshot) []model.ClientStats {
	return model.AggregateClients(s.Operations, s.GeneratedAt, e.o.ClientsWindow)
}

// evalFlags compares flags with the previous evaluation and emits
// raised/cleared events (a severity change counts as raised).
func (e *Engine) evalFlags() {
	// Flags are compared on the engine's cached views, not on a full
	// snapshot, and only for the operations whose view may have changed
	// since the last comparison: those touched since (e.changed) and those
	// whose flag deadline or running figure came (e.due). Events are built
	// only where a flag's kind or severity changed.
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clk.Now()
	diff := func(key, opID, endpoint string, flags []model.Flag, op *model.Operation) {
		prev := e.flags[key]
		same := len(prev) == len(flags)
		for _, f := range flags {
			if levelOf(prev, f.Kind) != f.Severity {
				same = false
				break
			}
		}
		if same {
			return
		}
		// Kinds and severities only: a few bytes per flagged operation.
		cur := make([]model.Flag, len(flags))
		for i, f := range flags {
			cur[i] = model.Flag{Kind: f.Kind, Severity: f.Severity}
			if levelOf(prev, f.Kind) != f.Severity {
				f := f
				f.Detail = textfmt.Line(f.Detail)
				e.emit(model.Event{At: now, Kind: model.EventFlagRaised, StatementID: opID, Endpoint: endpoint, Flag: &f,
					Message: fmt.Sprintf("%s %s: %s", f.Kind, f.Severity, f.Detail)})
			}
		}
		for _, f := range prev {
			if levelOf(cur, f.Kind) == model.SeverityNone {
				msg := fmt.Sprintf("%s cleared", f.Kind)
				if f.Kind == model.FlagCloseFailed && op != nil {
					if by := model.ClosedBy(op); by != "" {
						msg += ": " + by
					}
				}
				e.emit(model.Event{At: now, Kind: model.EventFlagCleared, StatementID: opID, Endpoint: endpoint, Flag: &f,
					Message: msg})
			}
		}
		if len(cur) == 0 {
			delete(e.flags, key)
		} else {
			e.flags[key] = cur
		}
	}
	e.evalFreshness(now)
	look := func(en *entry) {
		if en.deleted {
			return
		}
		// Only confirmed again since its view was built (quiet), a view
		// that time has not made stale has the flags, by kind and
		// severity, of the operation as it is: the view is built anew
		// only when a snapshot asks (viewOf), and its deadlines can only
		// have moved later.
		v, ok := en.view.Fresh(now)
		if !en.quiet || !ok || levelOf(v.Flags, model.FlagStale) != model.SeverityNone {
			v = e.viewOf(en, now)
		}
		if en.view.Gen() != en.flagged { // else these flags were compared already
			en.flagged = en.view.Gen()
			if id := en.op.StatementID; len(v.Flags) > 0 || e.flags[id] != nil {
				diff(id, id, "", v.Flags, &en.op)
			}
		}
		if at, ok := en.view.Until(); ok {
			e.due.set(en, at) // its next deadline; a running figure's is now: looked at next time
		} else {
			e.due.remove(en)
		}
	}
	// What is due is taken out first: a view with a running figure goes
	// back in due at once, for the next call.
	for en := e.due.popDue(now); en != nil; en = e.due.popDue(now) {
		if !en.inChanged {
			en.inChanged = true
			e.changed = append(e.changed, en)
		}
	}
	changed := e.changed
	for i, en := range changed {
		en.inChanged = false
		changed[i] = nil
		look(en)
	}
	e.changed = changed[:0]
	if verifyViews {
		for _, en := range e.ordered() { // nothing skipped above differs
			if en.dirty && !en.deleted {
				e.verifyQuiet(en, now)
			} else if _, ok := en.view.Fresh(now); ok {
				e.verifyView(en, now)
			} else if en.didx < 0 || en.due > stamp(now) {
				msg := fmt.Sprintf("poller: the view of %s is due but not scheduled", en.op.StatementID)
				viewViolation.CompareAndSwap(nil, &msg)
			}
		}
	}
	for _, ep := range e.eps {
		v := model.NewEndpointView(ep, now)
		key := "endpoint:" + v.Name
		if len(v.Flags) > 0 || e.flags[key] != nil {
			diff(key, "", v.Name, v.Flags, nil)
		}
	}
}

// levelOf is the severity of kind among flags (SeverityNone: absent).
func levelOf(flags []model.Flag, kind model.FlagKind) model.Severity {
	for _, f := range flags {
		if f.Kind == kind {
			return f.Severity
		}
	}
	return model.SeverityNone
}

// Health is the poller's own state: what it follows, its budget and its
// last error.
func (e *Engine) Health() Health {
	avail, capa := e.pol.Budget()
	e.mu.Lock()
	defer e.mu.Unlock()
	h := Health{InFlight: e.inflight, BudgetAvailable: avail, BudgetCapacity: capa,
		Polls: e.polls, Retries: e.pol.retries.Load(), GiveUps: e.pol.giveUps.Load(),
		EventsDropped: e.dropped.Load(), BatchCalls: e.batchCalls,
		LastDiscovery: e.lastDisc, DiscoveryFailures: e.discFails,
		DiscoveryUp: !e.lastDisc.IsZero() && !e.discFailed,
		Capacity:    e.lim.capacity(e.clk.Now()), Freshness: e.fresh}
	h.Capacity.Limit = e.lim.limit(e.rateSum, avail/max(capa, 1))
	for _, en := range e.ordered() { // a slice: a map walk was a tenth of a refresh
		if !en.retired {
			h.Followed++
		}
	}
	if e.lastErr != nil {
		le := *e.lastErr
		h.LastError = &le
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
