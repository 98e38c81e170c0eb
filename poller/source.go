package poller

import (
	"context"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// The engine's view of its sources. Each method makes ONE attempt and
// returns the raw outcome (a *sources.HTTPError, *sources.ServerError,
// sources.ErrHandleGone, or a transport error from net/http); the policy
// around it decides about retries. Sources never retry on their own.

// Discoverer lists the operations to follow (query history, or the
// simulator's own list).
type Discoverer interface {
	Discover(ctx context.Context) ([]Discovered, error)
}

// Discovered is one operation found by discovery, with how to reach it.
type Discovered struct {
	Op  model.Operation
	Ref sources.Ref
}

// StatusSource reports one operation's status.
type StatusSource interface {
	Status(ctx context.Context, ref sources.Ref) (sources.Status, error)
}

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

// ActionSource cancels and closes operations.
type ActionSource interface {
	Cancel(ctx context.Context, ref sources.Ref) error
	Close(ctx context.Context, ref sources.Ref) error
}

// CapacitySource lists Vector Search endpoints with their indexes.
// Probe sends one empty upsert to an endpoint's index (opt-in).
type CapacitySource interface {
	Endpoints(ctx context.Context) ([]model.Endpoint, error)
	Probe(ctx context.Context, endpoint string) error
}

// IdleCloser is implemented by sources whose HTTP transport can drop its
// idle pooled connections; the policy calls it before retrying after a
// transport error so the retry never reuses the connection that failed.
type IdleCloser interface {
	CloseIdleConnections()
}
