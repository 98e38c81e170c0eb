package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// lookup resolves an action target; it refuses in read-only mode first.
func (e *Engine) lookup(statementID string) (*entry, error) {
	if e.o.ReadOnly {
		return nil, ErrReadOnly
	}
	if e.o.Actions == nil {
		return nil, ErrNoActions
	}
	en := e.book.get(statementID)
	if en == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownOperation, statementID)
	}
	return en, nil
}

// Follows reports whether the engine follows (or recently followed) the
// operation: where a Fleet sends an action.
func (e *Engine) Follows(statementID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.book.get(statementID) != nil
}

// Adopt makes dbxtop responsible for closing the operation once it is
// terminal (at once if it already is and still open).
func (e *Engine) Adopt(ctx context.Context, statementID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, err := e.lookup(statementID)
	if err != nil {
		return err
	}
	now := e.clk.Now()
	e.book.adopt(en)
	op := &en.op
	e.out.emit(model.Event{At: now, Kind: model.EventAction, StatementID: statementID, Message: "adopted: dbxtop will close it when it becomes terminal"})
	closed := op.State == model.StateClosed || (op.Open != nil && !*op.Open) || op.Gone
	if op.State.Terminal() && !closed && !en.queued && op.Close.State != model.CloseClosed {
		e.enqueueClose(en, now, "adopted operation is already "+string(op.State))
	}
	return nil
}

// Close re-closes the operation now. On failure the close is queued and
// retried with backoff (CLOSE_FAILED) and the error is returned.
func (e *Engine) Close(ctx context.Context, statementID string) error {
	e.mu.Lock()
	en, err := e.lookup(statementID)
	if err == nil && !e.book.startClose(en) {
		err = fmt.Errorf("a close of %s is already in flight", statementID)
	}
	if err != nil {
		e.mu.Unlock()
		return err
	}
	now := e.clk.Now()
	_, closeCall := e.actionCalls(en.ref)
	e.out.emit(model.Event{At: now, Kind: model.EventAction, StatementID: statementID, Call: closeCall, Message: "close requested by the operator"})
	e.mu.Unlock()
	return noHandle("close", e.closeAttempt(ctx, en))
}

// NoHandleError is an action on an operation whose handle dbxtop does not
// hold, refused by a server that checks handle secrets (it found no
// operation for a handle rebuilt from the statement id). Said in one line
// with who could act, instead of a bare INVALID_HANDLE; Err is the answer.
type NoHandleError struct {
	Action string // "close", "cancel"
	Err    error
}

func (e *NoHandleError) Error() string {
	return e.Action + " refused: dbxtop does not hold this operation's handle and the server refuses one rebuilt from its statement id; " +
		"the client that started it holds it, and so would `dbxtop proxy` on that client's path (--proxy)"
}

func (e *NoHandleError) Unwrap() error { return e.Err }

// noHandle names a refusal of a rebuilt handle (sources.ErrHandleUnverified).
func noHandle(action string, err error) error {
	if err != nil && errors.Is(err, sources.ErrHandleUnverified) {
		return &NoHandleError{Action: action, Err: err}
	}
	return err
}

// closeRound is the close queue's retry of one queued close.
func (e *Engine) closeRound(ctx context.Context, en *entry) { _ = e.closeAttempt(ctx, en) }

// closeAttempt runs one policy-wrapped close (en.closing is set) and
// records its outcome.
func (e *Engine) closeAttempt(ctx context.Context, en *entry) error {
	e.mu.Lock()
	ref := en.ref
	e.mu.Unlock()
	_, closeCall := e.actionCalls(ref)
	n, err := e.pol.DoAttempts(ctx, retry.Call{Name: closeCall, Safe: true, OpID: ref.StatementID}, func(ctx context.Context) error {
		return e.o.Actions.Close(ctx, ref)
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clk.Now()
	e.book.closeAttempted(en, n)
	switch {
	case err == nil:
		e.finishClose(en, now, "closed")
		return nil
	case errors.Is(err, sources.ErrHandleGone) && !errors.Is(err, sources.ErrHandleUnverified):
		e.finishClose(en, now, "the server no longer has the handle")
		return nil
	case ctx.Err() != nil && !en.queued:
		// The caller gave up before any answer: queue it all the same.
	case ctx.Err() != nil:
		return err // engine shutting down; Shutdown makes the last attempt
	}
	info := retry.ErrorInfoOf(err)
	wait := e.book.closeFailed(en, info, now, e.pol.Rand())
	e.hs.lastErr = info
	c := &en.op.Close
	e.out.emit(model.Event{At: now, Kind: model.EventCloseFailed, StatementID: en.op.StatementID, Call: closeCall,
		Message:   fmt.Sprintf("close failed (%s so far); next try in %s", textfmt.Plural(int64(c.Attempts), "attempt", "attempts"), textfmt.Elapsed(wait)),
		RequestID: info.RequestID, Err: info})
	e.loop.signal()
	return err
}

// enqueueClose queues a close to run now (the loop picks it up).
func (e *Engine) enqueueClose(en *entry, now time.Time, why string) {
	e.book.queueClose(en, now)
	e.out.emit(model.Event{At: now, Kind: model.EventAction, StatementID: en.op.StatementID, Call: CallClose, Message: "close queued: " + why})
	e.loop.signal()
}

// finishClose marks the operation closed and leaves the queue.
func (e *Engine) finishClose(en *entry, now time.Time, how string) {
	e.book.closed(en)
	e.out.emit(model.Event{At: now, Kind: model.EventAction, StatementID: en.op.StatementID, Call: CallClose, Message: how})
	e.retire(en, now)
}

// Cancel asks the server to cancel the operation (a safe call: repeating
// a cancel is harmless). The next status poll is brought forward.
func (e *Engine) Cancel(ctx context.Context, statementID string) error {
	e.mu.Lock()
	en, err := e.lookup(statementID)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	ref := en.ref
	cancelCall, _ := e.actionCalls(ref)
	e.out.emit(model.Event{At: e.clk.Now(), Kind: model.EventAction, StatementID: statementID, Call: cancelCall, Message: "cancel requested by the operator"})
	e.mu.Unlock()
	err = e.pol.Do(ctx, retry.Call{Name: cancelCall, Safe: true, OpID: statementID}, func(ctx context.Context) error {
		return e.o.Actions.Cancel(ctx, ref)
	})
	err = noHandle("cancel", err)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clk.Now()
	ev := model.Event{At: now, Kind: model.EventAction, StatementID: statementID, Call: cancelCall, Message: "canceled"}
	if err != nil {
		info := retry.ErrorInfoOf(err)
		ev.Message, ev.Err, ev.RequestID = "cancel failed: "+info.Message, info, info.RequestID
	} else if !en.retired && !en.polling {
		e.sched.at(en, now)
		e.loop.signal()
	}
	e.out.emit(ev)
	return err
}

// Shutdown, after Run has returned, makes one last close attempt for every
// queued close (adopted operations and operator re-closes), bounded by
// ctx, and returns the ids still open, sorted.
func (e *Engine) Shutdown(ctx context.Context) []string {
	queued := e.book.queued()
	var open []string
	for _, en := range queued {
		err := ctx.Err()
		if err == nil {
			err = e.o.Actions.Close(ctx, en.ref)
		}
		e.mu.Lock()
		e.book.closeAttempted(en, 1)
		if err == nil || errors.Is(err, sources.ErrHandleGone) && !errors.Is(err, sources.ErrHandleUnverified) {
			e.finishClose(en, e.clk.Now(), "closed at shutdown")
		} else {
			open = append(open, en.op.StatementID)
			e.log(slog.LevelWarn, "close at shutdown failed: "+retry.Describe(err),
				slog.String("call", CallClose), slog.String("operation", en.op.StatementID))
		}
		e.mu.Unlock()
	}
	sort.Strings(open)
	return open
}

// actionCalls names the cancel and close calls the action source makes
// for ref: the Thrift names unless the source says otherwise
// (sources.ActionNamer), so a REST cancel reads CancelExecution.
func (e *Engine) actionCalls(ref sources.Ref) (cancel, close string) {
	if n, ok := e.o.Actions.(sources.ActionNamer); ok {
		return n.ActionCalls(ref)
	}
	return CallCancel, CallClose
}
