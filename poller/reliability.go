package poller

import (
	"context"
	"errors"
	"fmt"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// Settler reads the final state of an operation whose handle is gone
// (query history keeps the execution status of closed statements).
type Settler interface {
	Settle(ctx context.Context, retry sources.Retry, ref sources.Ref) (sources.Status, error)
}

// retry is this engine's sources.Retry: each request of a multi-request
// listing goes through the policy on its own (a throttled page is retried
// alone; the pages already read are kept). Listings are safe to repeat.
func (e *Engine) retry(ctx context.Context, call string, fn func(context.Context) error) error {
	return e.pol.Do(ctx, retry.Call{Name: call, Safe: true}, fn)
}

// setDiscoveryErrors replaces the workspace errors of the previous
// discovery with this one's: a listing that failed, a truncation, a side
// listing (warehouses) that failed. Called with e.mu held.
func (e *Engine) setDiscoveryErrors(errs []error) {
	for k := range e.disc.keys {
		delete(e.hs.wsErrs, k)
	}
	e.disc.keys = map[string]bool{}
	for _, err := range errs {
		info := listingErrorInfo(err)
		key := string(info.Kind) + ":" + info.Call
		e.hs.wsErrs[key] = *info
		e.disc.keys[key] = true
		e.hs.lastErr = info
	}
}

// listingErrorInfo is the error entry of one listing problem. A truncation
// is kind "truncated" with how much was seen and why, and, when a failed
// request cut it short, that request's code, status and request id.
func listingErrorInfo(err error) *model.ErrorInfo {
	t, ok := sources.IsTruncated(err)
	if !ok {
		return retry.ErrorInfoOf(err)
	}
	info := &model.ErrorInfo{Kind: model.KindTruncated, Call: t.Call, Seen: t.Seen}
	if t.Err != nil {
		base := retry.ErrorInfoOf(t.Err)
		info.ErrorCode, info.HTTPStatus, info.RequestID = base.ErrorCode, base.HTTPStatus, base.RequestID
		info.Attempts, info.Elapsed = base.Attempts, base.Elapsed
	}
	info.Message = sources.Redact(fmt.Sprintf("listing truncated after %d pages, %d %s seen: %s", t.Pages, t.Seen, t.What, t.Reason))
	if t.Err != nil {
		info.Message += ": " + sources.Redact(retry.Describe(t.Err))
	}
	return info
}

// settleGone decides the final state of an operation whose handle the
// server no longer has, from evidence: query history (Options.Settle),
// else what dbxtop last saw if that was already final, else UNKNOWN. A
// gone operation is never left RUNNING. Called without e.mu.
func (e *Engine) settleGone(ctx context.Context, en *entry) (sources.Status, error) {
	e.mu.Lock()
	ref, state := en.ref, en.op.State
	e.mu.Unlock()
	closed := false
	if state.Terminal() || state == model.StateClosed {
		return sources.Status{State: state, Open: &closed}, nil
	}
	if e.o.Settle == nil {
		return sources.Status{State: model.StateUnknown, Open: &closed,
			Note: "the server no longer has it and no source says how it ended"}, nil
	}
	st, err := e.o.Settle.Settle(ctx, e.retry, ref)
	if err != nil {
		return sources.Status{State: model.StateUnknown, Open: &closed}, err
	}
	if st.State == "" || st.State.Live() {
		st.State = model.StateUnknown
	}
	st.Open = &closed
	return st, nil
}

// roundStatus records, after a RunOnce poll round, which operations'
// status was not read this round: each carries the reason (LastError), and
// the round gets one error entry of kind "unread" — the snapshot must not
// say OK when it could not see. Called with e.mu held.
func (e *Engine) roundStatus(due []*entry, ctxErr error) {
	delete(e.hs.wsErrs, unreadKey)
	if len(due) == 0 {
		return
	}
	read, unread := 0, 0
	var first *model.ErrorInfo
	for _, en := range due {
		op := &en.op
		if en.readRound == e.hs.round {
			read++
			continue
		}
		unread++
		msg := "status not read this round"
		if ctxErr != nil {
			msg += ": the round ended before its poll (" + ctxErr.Error() + ")"
		}
		e.book.unread(en, msg)
		if first == nil {
			first = op.LastError
		}
	}
	if unread == 0 {
		return
	}
	info := model.ErrorInfo{Kind: model.KindUnread, Call: first.Call, ErrorCode: first.ErrorCode,
		HTTPStatus: first.HTTPStatus, RequestID: first.RequestID, Attempts: first.Attempts, Elapsed: first.Elapsed, Seen: read}
	if read == 0 {
		info.Message = fmt.Sprintf("could not read the status of any of the %d operations this round: %s", unread, first.Message)
	} else {
		info.Message = fmt.Sprintf("could not read the status of %d of %d operations this round: %s", unread, read+unread, first.Message)
	}
	e.hs.wsErrs[unreadKey] = info
}

const unreadKey = "unread"

// errCtx is the reason a round's context ended, for the unread note.
func errCtx(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("deadline exceeded")
		}
		return err
	}
	return nil
}
