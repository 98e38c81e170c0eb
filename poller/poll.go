package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// pollOne makes one policy-wrapped status call and applies its outcome.
// A failed poll never drops the operation: it is rescheduled like any other.
func (e *Engine) pollOne(ctx context.Context, en *entry) {
	e.mu.Lock()
	ref := en.ref
	e.mu.Unlock()
	call := retry.Call{Name: CallStatus, Safe: true, OpID: ref.StatementID}
	st, err := retry.Do(ctx, e.pol, call, func(ctx context.Context) (sources.Status, error) {
		t0 := e.clk.Now()
		st, err := e.o.Status.Status(ctx, ref)
		e.sched.lim.observe(e.clk.Now(), e.clk.Now().Sub(t0), err)
		return st, err
	})
	var settled sources.Status
	var settleErr error
	if errors.Is(err, sources.ErrHandleGone) && !errors.Is(err, sources.ErrHandleUnverified) && ctx.Err() == nil {
		settled, settleErr = e.settleGone(ctx, en)
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clk.Now()
	// An activity probe that could not tell — the poll failed, or the
	// answer came from a source that never reports activity (a warehouse
	// that is not running is asked through the REST API) — is not spent:
	// a later operation gets it.
	if en.probe && !e.batch.activity && (err != nil || (st.ClientLastActivity == nil && st.Note != "")) {
		e.batch.probes--
	}
	en.polling, en.probe = false, false
	e.sched.inflight--
	e.hs.polls++
	if err != nil && ctx.Err() != nil {
		// Shutting down, or a RunOnce round's deadline: not a failure of
		// the operation. It stays scheduled, so the next round (--watch)
		// polls it again.
		if !en.retired && en.idx < 0 {
			e.sched.at(en, now)
		}
		return
	}
	switch {
	case errors.Is(err, sources.ErrHandleGone) && !errors.Is(err, sources.ErrHandleUnverified):
		// The server answered: it no longer has the operation. That is
		// news about the operation, not a failure of dbxtop's polling.
		e.markGone(en, now, settled, settleErr)
		return
	case err != nil:
		info := retry.ErrorInfoOf(err)
		e.book.failed(en, info, now)
		e.hs.lastErr = info
	default:
		if st.ClientLastActivity != nil && !e.batch.activity {
			// The source reports the owning client's activity (INACTIVE's
			// evidence): live operations keep a per-operation poll.
			e.batch.activity = true
			e.log(slog.LevelInfo, "the status source reports client activity: live operations are polled one by one too")
		}
		e.applyStatus(en, st, now)
	}
	if en.retired {
		return
	}
	e.book.answered(en, err)
	e.scheduleNext(en, now, err)
}

// maxServerWait bounds how long a Retry-After can delay the next poll.
const maxServerWait = 2 * time.Minute

// applyStatus records one successful status observation.
func (e *Engine) applyStatus(en *entry, st sources.Status, now time.Time) {
	prev := e.book.apply(en, st, now, e.hs.round)
	op := &en.op
	if prev != op.State {
		msg := fmt.Sprintf("%s → %s", prev, op.State)
		if op.ServerError != "" && op.State == model.StateFailed {
			msg += ": " + op.ServerError
		}
		e.out.emit(model.Event{At: now, Kind: model.EventStateChange, StatementID: op.StatementID, Call: CallStatus, Message: msg})
	}
	closed := op.State == model.StateClosed || (op.Open != nil && !*op.Open)
	if op.Adopted && op.State.Terminal() && !closed && op.Close.State == model.CloseNA {
		e.enqueueClose(en, now, "adopted operation became "+string(op.State))
	}
	// A known-open operation is polled until it is closed or reaped,
	// however long that takes; one whose openness no source tells is
	// asked only while UNCLOSED could still matter (belief.go).
	if closed && !en.queued {
		e.retire(en, now)
	} else if e.book.pastOpenWindow(en, now) {
		e.retireUnknown(en, now)
	}
	e.book.addLive(en) // a source that took back an end (never query history)
}

// markTerminal records when en ended, once it is known to have ended:
// its completion time, or now when that is unknown or in the future.
func markTerminal(en *entry, now time.Time) {
	if op := &en.op; op.State.Terminal() && !en.terminal {
		at := op.CompletedAt
		if at.IsZero() || at.After(now) {
			at = now
		}
		en.terminal, en.terminalAt = true, stamp(at)
	}
}

// markGone records that the server no longer has the operation, with the
// final state the evidence gave (settleGone): never still RUNNING. The
// server's answer confirms the operation's fate, so it counts as a read
// status when the final state was settled; a failed settle is the row's
// reason.
func (e *Engine) markGone(en *entry, now time.Time, st sources.Status, settleErr error) {
	prev, wasGone := e.book.gone(en, st, settleErr, now, e.hs.round)
	op := &en.op
	if !wasGone {
		msg := "the server no longer has this operation (closed or reaped)"
		if op.State != prev {
			msg += fmt.Sprintf("; %s → %s", prev, op.State)
			if st.Source == model.StatusViaHistory {
				msg += " (from query history)"
			}
		}
		e.out.emit(model.Event{At: now, Kind: model.EventGone, StatementID: op.StatementID, Call: CallStatus, Message: msg})
	}
	if en.queued {
		e.finishClose(en, now, "the server no longer has the handle")
	}
	e.retire(en, now)
}
