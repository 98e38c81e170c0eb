package poller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// pollOne makes one policy-wrapped status call and applies its outcome.
// A failed poll never drops the operation: it is rescheduled like any other.
func (e *Engine) pollOne(ctx context.Context, en *entry) {
	e.mu.Lock()
	ref := en.ref
	e.mu.Unlock()
	call := Call{Name: CallStatus, Safe: true, OpID: ref.StatementID}
	st, err := Do(ctx, e.pol, call, func(ctx context.Context) (sources.Status, error) {
		return e.o.Status.Status(ctx, ref)
	})

	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clk.Now()
	en.polling = false
	e.inflight--
	e.polls++
	if err != nil && ctx.Err() != nil {
		return // shutting down: not a failure of the operation
	}
	op := &en.op
	switch {
	case errors.Is(err, sources.ErrHandleGone) && !errors.Is(err, sources.ErrHandleUnverified):
		// The server answered: it no longer has the operation. That is
		// news about the operation, not a failure of dbxtop's polling.
		e.markGone(en, now)
		return
	case err != nil:
		op.Poll.Failed++
		info := ErrorInfoOf(err)
		op.LastError = info
		e.lastErr = info
	default:
		e.applyStatus(en, st, now)
	}
	if en.retired {
		return
	}
	wait := pollInterval(op, now, e.pol.o.Rand())
	// A server that asked for more time than the policy would wait gets
	// it before the next poll too (bounded, so the operation is not lost).
	var he *sources.HTTPError
	if err != nil && errors.As(err, &he) && he.RetryAfter > wait {
		wait = min(he.RetryAfter, maxServerWait)
	}
	en.next = now.Add(wait)
	e.heap.reschedule(en)
}

// maxServerWait bounds how long a Retry-After can delay the next poll.
const maxServerWait = 2 * time.Minute

// applyStatus records one successful status observation.
func (e *Engine) applyStatus(en *entry, st sources.Status, now time.Time) {
	op := &en.op
	prev := op.State
	if st.State != "" {
		op.State = st.State
	}
	if !st.StartedAt.IsZero() {
		op.StartedAt = st.StartedAt
	}
	if !st.CompletedAt.IsZero() {
		op.CompletedAt = st.CompletedAt
	}
	if st.ErrorMessage != "" {
		op.ServerError = st.ErrorMessage
	}
	if st.ClientLastActivity != nil {
		op.ClientActivityKnown, op.ClientLastActivity = true, *st.ClientLastActivity
	}
	if st.Open != nil {
		v := *st.Open
		op.Open = &v
	}
	if st.Proxy != nil {
		op.Proxy = st.Proxy
	}
	op.LastPollOKAt = now
	op.Poll.OK++
	op.LastError = nil
	if prev != op.State {
		msg := fmt.Sprintf("%s → %s", prev, op.State)
		if op.ServerError != "" && op.State == model.StateFailed {
			msg += ": " + op.ServerError
		}
		e.emit(Event{At: now, Kind: EventStateChange, StatementID: op.StatementID, Call: CallStatus, Message: msg})
	}
	closed := op.State == model.StateClosed || (op.Open != nil && !*op.Open)
	if op.State.Terminal() && en.terminalAt.IsZero() {
		en.terminalAt = op.CompletedAt
		if en.terminalAt.IsZero() || en.terminalAt.After(now) {
			en.terminalAt = now
		}
	}
	// A terminal operation whose openness the source cannot tell is
	// polled (every 10 s, to learn when it is closed) only while UNCLOSED
	// could still matter; a known-open one is polled until it is closed
	// or reaped, however long that takes.
	if op.State.Terminal() && op.Open == nil && !en.queued && !op.Adopted && now.Sub(en.terminalAt) > 5*e.o.Thresholds.LeakAfter+time.Minute {
		closed = true
	}
	if op.Adopted && op.State.Terminal() && !closed && op.Close.State == model.CloseNA {
		e.enqueueClose(en, now, "adopted operation became "+string(op.State))
	}
	if closed && !en.queued {
		e.retire(en, now)
	}
}

// markGone records that the server no longer has the operation.
func (e *Engine) markGone(en *entry, now time.Time) {
	op := &en.op
	if !op.Gone {
		e.emit(Event{At: now, Kind: EventGone, StatementID: op.StatementID, Call: CallStatus,
			Message: "the server no longer has this operation (closed or reaped)"})
	}
	op.Gone = true
	f := false
	op.Open = &f
	if en.queued {
		e.finishClose(en, now, "the server no longer has the handle")
	}
	e.retire(en, now)
}
