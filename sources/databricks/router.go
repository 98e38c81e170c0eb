package databricks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/dbxtop/dbxtop/sources"
)

// StatusWithFallback prefers primary for status (the Thrift client: it can
// report the owning client's last activity, which the Statement Execution
// API cannot) and asks the Statement Execution API when primary says the
// handle is gone, the server refuses the call, or the warehouse has no
// Thrift path (HTTP 404/405); where neither can tell, query history gives
// the state and openness and activity stay unknown.
//
// It learns from the answers of a real workspace rather than assuming:
//   - a handle rebuilt from a statement id may be refused by a server that
//     checks handle secrets (sources.ErrHandleUnverified); once primary
//     answers a rebuilt handle, the server looks handles up without the
//     secret and its INVALID_HANDLE is evidence that the operation is gone;
//   - once the REST API finds a statement running or held open that
//     primary called gone, primary is no longer asked, so an observer never
//     reports a live statement as gone;
//   - the Statement Execution API's 404 is never "gone" (it may know only
//     statements run through it): it is "this source cannot tell".
//
// Transport errors and throttling are returned as they are: the poller
// retries them.
func StatusWithFallback(primary sources.StatusSource, rest *Client) sources.StatusSource {
	if primary == nil {
		return rest
	}
	return &statusRouter{primary: primary, rest: rest}
}

type statusRouter struct {
	primary  sources.StatusSource
	rest     *Client
	disabled atomic.Bool  // primary proved unable to see live statements
	verified atomic.Int32 // primary "gone" answers the REST API confirmed
	// rebuiltOK: primary answered a handle rebuilt without its secret, so
	// the server looks handles up by statement id alone.
	rebuiltOK atomic.Bool
}

// verifyGone is how many "gone" answers are checked against the REST API
// before primary's word is taken: enough to catch a server that refuses
// observers' handles, few enough that a workspace with hundreds of closed
// statements does not pay a rate-limited REST call for each.
const verifyGone = 3

// Status notes of an operation whose openness and client activity no
// source can tell: asked over Thrift and REST, or (warehouse not running)
// over REST alone.
const (
	cannotTellNote = "neither Thrift (a handle rebuilt from the statement id) nor the Statement Execution API " +
		"knows it by statement id alone: " + cannotTellTail
	cannotTellRESTNote = "the Statement Execution API does not know it by statement id alone: " + cannotTellTail
	cannotTellTail     = "whether it is open and when its client was last active cannot be known here; " +
		"`dbxtop proxy` on the client's path would tell"
)

func (r *statusRouter) Status(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	if ok, why := r.rest.Gate().Running(ref.WarehouseID); !ok {
		// Never a warehouse-level call to a warehouse that is not running:
		// Thrift would start it. The Statement Execution API is
		// workspace-level.
		st, err := r.rest.Status(ctx, ref)
		if cannotTell(err) {
			st, err = r.fromHistory(ctx, ref, err, cannotTellRESTNote)
		}
		st.Note = sources.JoinNotes(why, st.Note)
		return st, err
	}
	if r.disabled.Load() {
		st, err := r.rest.Status(ctx, ref)
		if cannotTell(err) {
			return r.fromHistory(ctx, ref, err, cannotTellNote)
		}
		return st, err
	}
	st, err := r.primary.Status(ctx, ref)
	if err == nil && len(ref.Secret) == 0 {
		r.rebuiltOK.Store(true)
	}
	if err == nil || !fallbackWorthy(err) {
		return st, err
	}
	gone := errors.Is(err, sources.ErrHandleGone)
	unverified := errors.Is(err, sources.ErrHandleUnverified)
	if gone && unverified && r.rebuiltOK.Load() {
		// This server answered a rebuilt handle before: it finds
		// operations without the secret, so its INVALID_HANDLE is news.
		err, unverified = fmt.Errorf("%w (this server answers handles rebuilt from statement ids: %s)", sources.ErrHandleGone, err.Error()), false
	}
	if gone && !unverified && r.verified.Load() >= verifyGone {
		return st, err
	}
	rst, rerr := r.rest.Status(ctx, ref)
	if gone && rerr == nil {
		if rst.State.Live() || (rst.Open != nil && *rst.Open) {
			// Primary called a statement gone that the server still runs
			// or holds: it cannot see observers' handles.
			r.disabled.Store(true)
		} else if !unverified {
			r.verified.Add(1)
			if rst.Open == nil {
				// The REST API does not contradict primary (the statement
				// ended, openness unknown): the handle is gone, now
				// confirmed by a second source.
				return sources.Status{}, fmt.Errorf("%w (the Statement Execution API reports it %s)", sources.ErrHandleGone, rst.State)
			}
		}
	}
	if cannotTell(rerr) {
		if gone && !unverified {
			return st, err // primary's word stands; the REST API cannot tell
		}
		return r.fromHistory(ctx, ref, rerr, cannotTellNote)
	}
	if gone && errors.Is(rerr, sources.ErrHandleGone) {
		r.verified.Add(1)
	}
	return rst, rerr
}

// cannotTell is an answer that says nothing about the operation: the
// source knows no operation by this statement id alone.
func cannotTell(err error) bool { return errors.Is(err, sources.ErrHandleUnverified) }

// fromHistory is the last source for an operation that neither Thrift nor
// the Statement Execution API can tell about: query history gives its
// state; openness and client activity stay unknown (nil), with a note that
// says why and what would tell. A statement history does not list yet
// keeps the "cannot tell" answer (why): nothing was read.
func (r *statusRouter) fromHistory(ctx context.Context, ref sources.Ref, why error, note string) (sources.Status, error) {
	m, err := r.rest.StatusBatch(ctx, []sources.Ref{ref})
	if err != nil {
		return sources.Status{}, err
	}
	st, ok := m[strings.ToLower(ref.StatementID)]
	if !ok {
		return sources.Status{}, why
	}
	st.Open, st.ClientLastActivity = nil, nil
	st.Note = note
	return st, nil
}

// PrimaryDisabled reports whether the router stopped asking the primary
// source (for the log and the docs' troubleshooting).
func (r *statusRouter) PrimaryDisabled() bool { return r.disabled.Load() }

func fallbackWorthy(err error) bool {
	if errors.Is(err, sources.ErrHandleGone) {
		return true
	}
	var se *sources.ServerError
	if errors.As(err, &se) {
		return true
	}
	var he *sources.HTTPError
	if errors.As(err, &he) {
		return he.StatusCode == http.StatusNotFound || he.StatusCode == http.StatusMethodNotAllowed
	}
	return false
}

// GatedActions sends cancel and close over Thrift (primary) only to
// running warehouses; for the others it uses the Statement Execution API
// (rest), which does not start a warehouse.
func GatedActions(primary sources.ActionSource, rest *Client) sources.ActionSource {
	if primary == nil {
		return rest
	}
	return gatedActions{primary: primary, rest: rest}
}

type gatedActions struct {
	primary sources.ActionSource
	rest    *Client
}

func (g gatedActions) Cancel(ctx context.Context, ref sources.Ref) error {
	if ok, _ := g.rest.Gate().Running(ref.WarehouseID); ok {
		return g.primary.Cancel(ctx, ref)
	}
	return g.rest.Cancel(ctx, ref)
}

func (g gatedActions) Close(ctx context.Context, ref sources.Ref) error {
	if ok, _ := g.rest.Gate().Running(ref.WarehouseID); ok {
		return g.primary.Close(ctx, ref)
	}
	return g.rest.Close(ctx, ref)
}

// ActionCalls names the Thrift calls for a running warehouse, the
// Statement Execution API's otherwise (sources.ActionNamer).
func (g gatedActions) ActionCalls(ref sources.Ref) (cancel, close string) {
	if ok, _ := g.rest.Gate().Running(ref.WarehouseID); ok {
		if n, ok := g.primary.(sources.ActionNamer); ok {
			return n.ActionCalls(ref)
		}
		return "CancelOperation", "CloseOperation"
	}
	return g.rest.ActionCalls(ref)
}
