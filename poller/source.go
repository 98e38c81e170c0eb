package poller

import (
	"context"

	"github.com/dbxtop/dbxtop/sources"
)

// The engine's view of its sources; the interfaces live in sources so that
// sources/* need not import the poller. Each method makes ONE attempt and
// returns the raw outcome (a *sources.HTTPError, *sources.ServerError,
// sources.ErrHandleGone, or a transport error from net/http); the policy
// around it decides about retries. Sources never retry on their own.
type (
	Discoverer     = sources.Discoverer
	Discovered     = sources.Discovered
	StatusSource   = sources.StatusSource
	ActionSource   = sources.ActionSource
	CapacitySource = sources.CapacitySource
	IdleCloser     = sources.IdleCloser
)

// BatchStatusSource confirms many operations' states per request (query
// history filtered by statement ids). StatusBatch makes ONE request for at
// most BatchLimit refs and returns the status of each statement the
// server listed, by statement id; an absent id is not confirmed.
type BatchStatusSource interface {
	StatusBatch(ctx context.Context, refs []sources.Ref) (map[string]sources.Status, error)
	BatchLimit() int
}

// LiveLister is a BatchStatusSource that can also list every live
// statement, a page per call (query history filtered by status): one
// request confirms up to a page of live operations, so a round costs
// ⌈live / page⌉ requests plus id lookups for what the listing missed.
// ListLive makes ONE request; token "" asks for the first page and the
// returned token is "" after the last.
type LiveLister interface {
	ListLive(ctx context.Context, token string) (map[string]sources.Status, string, error)
}
