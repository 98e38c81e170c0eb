package databricks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/dbxtop/dbxtop/sources"
)

// StatusWithFallback prefers primary for status (the Thrift client: it can
// report the owning client's last activity, which the Statement Execution
// API cannot) and asks the Statement Execution API when primary says the
// handle is gone, the server refuses the call, or the warehouse has no
// Thrift path (HTTP 404/405). A handle rebuilt from a statement id may be
// refused by a server that checks handle secrets; once the REST API finds a
// statement running or held open that primary called gone, primary is no
// longer asked, so an observer never reports a live statement as gone. Transport errors and throttling
// are returned as they are: the poller retries them.
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
}

// verifyGone is how many "gone" answers are checked against the REST API
// before primary's word is taken: enough to catch a server that refuses
// observers' handles, few enough that a workspace with hundreds of closed
// statements does not pay a rate-limited REST call for each.
const verifyGone = 3

func (r *statusRouter) Status(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	if ok, why := r.rest.Gate().Running(ref.WarehouseID); !ok {
		// Never a warehouse-level call to a warehouse that is not running:
		// Thrift would start it. The Statement Execution API is
		// workspace-level.
		st, err := r.rest.Status(ctx, ref)
		st.Note = why
		return st, err
	}
	if r.disabled.Load() {
		return r.rest.Status(ctx, ref)
	}
	st, err := r.primary.Status(ctx, ref)
	if err == nil || !fallbackWorthy(err) {
		return st, err
	}
	gone := errors.Is(err, sources.ErrHandleGone)
	// A rebuilt handle's INVALID_HANDLE is never taken as the last word:
	// the REST API decides (docs/proxy.md, "Acting with the real handle").
	if gone && r.verified.Load() >= verifyGone && !errors.Is(err, sources.ErrHandleUnverified) {
		return st, err
	}
	rst, rerr := r.rest.Status(ctx, ref)
	if gone && rerr == nil {
		if rst.State.Live() || (rst.Open != nil && *rst.Open) {
			// Primary called a statement gone that the server still runs
			// or holds: it cannot see observers' handles.
			r.disabled.Store(true)
		} else {
			r.verified.Add(1)
			if rst.Open == nil {
				// The REST API does not contradict primary (the statement
				// ended, openness unknown): the handle is gone, now
				// confirmed by a second source — also when primary's
				// answer alone was unverified (a rebuilt handle).
				return sources.Status{}, fmt.Errorf("%w (the Statement Execution API reports it %s)", sources.ErrHandleGone, rst.State)
			}
		}
	}
	if gone && errors.Is(rerr, sources.ErrHandleGone) {
		r.verified.Add(1)
	}
	return rst, rerr
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
