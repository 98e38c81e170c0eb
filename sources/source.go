// Package sources holds what every source of operations and endpoints
// shares: references, status reports, the errors they return, and the
// interfaces the poller drives them through; sources/thrift,
// sources/databricks and the simulator's clients implement them.
//
// It imports only model and textfmt from dbxtop; no source imports the
// poller, which drives sources through these interfaces.
package sources

import (
	"context"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Ref identifies an operation to a source.
type Ref struct {
	StatementID string // lower-case UUID
	WarehouseID string
	// Secret is the Thrift handle secret when known (only echoed back).
	Secret []byte
}

// Status is one successful status observation of an operation.
type Status struct {
	State       model.State
	StartedAt   time.Time
	CompletedAt time.Time
	// ErrorMessage is the server's error (or display) message.
	ErrorMessage string
	// ClientLastActivity is when the owning client last called the server;
	// nil when the source cannot tell.
	ClientLastActivity *time.Time
	// ClientActivityUnknown: what was known of the client's activity no
	// longer holds (the proxy that saw its calls does not answer), so it
	// becomes unknown; Note says why.
	ClientActivityUnknown bool
	// Open reports whether the server still holds the operation; nil when
	// unknown. A nil Open leaves what an earlier answer said, unless
	// OpenUnknown: what was known no longer holds (the proxy's evidence
	// aged out), so openness becomes unknown.
	Open        *bool
	OpenUnknown bool
	// OpenByProxy: Open is a proxy's proof (it relayed the handle and saw
	// no close), not the server's answer. The proxy cannot see the
	// server's reaper, so the poller ages the proof (--server-leak-timeout).
	OpenByProxy bool
	// Proxy is what `dbxtop proxy` saw of the operation; nil when no proxy
	// is configured or it did not see it.
	Proxy *model.ProxyAccount
	// Source is the call that answered (model.StatusViaThrift, …); Note
	// says why it was that one when not the usual path (the warehouse is
	// not running, so Thrift was not asked).
	Source, Note string
}

// JoinNotes joins two status notes (Status.Note) with "; ", either of
// which may be empty.
func JoinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// ListedStatus is what a query-history row, discovered as op, says of the
// operation's execution: its state, times and error, read from history
// (openness and client activity are not in it).
func ListedStatus(op *model.Operation) Status {
	return Status{State: op.State, StartedAt: op.StartedAt, CompletedAt: op.CompletedAt,
		ErrorMessage: op.ServerError, Source: model.StatusViaHistory}
}

// The poller's view of its sources. Each method makes ONE attempt and
// returns the raw outcome (a *HTTPError, *ServerError, ErrHandleGone, or a
// transport error from net/http); the poller's policy decides about
// retries. Sources never retry on their own.

// Discoverer lists the operations to follow (query history, or the
// simulator's own list). A listing of several requests makes each through
// retry; a usable but incomplete result comes with a *PartialError.
type Discoverer interface {
	Discover(ctx context.Context, retry Retry) ([]Discovered, error)
}

// Scope narrows one discovery to some of its listings. The zero value
// is a full discovery.
type Scope struct {
	// NoLive skips the listing of live statements: the engine's batch
	// listing (LiveLister) reads them every second and adopts the new ones.
	NoLive bool
	// NoFinished skips the listing of recently ended statements (they
	// matter from --leak-after after their end: the engine lists them at
	// that pace, not at every discovery).
	NoFinished bool
}

// ScopedDiscoverer is a Discoverer that can make only part of its
// listings.
type ScopedDiscoverer interface {
	Discoverer
	DiscoverScope(ctx context.Context, retry Retry, scope Scope) ([]Discovered, error)
}

// DiscoverIn runs d within scope when d can narrow its listings, and a
// full discovery otherwise (listing more is never wrong, only dearer).
func DiscoverIn(ctx context.Context, d Discoverer, retry Retry, scope Scope) ([]Discovered, error) {
	if sd, ok := d.(ScopedDiscoverer); ok && scope != (Scope{}) {
		return sd.DiscoverScope(ctx, retry, scope)
	}
	return d.Discover(ctx, retry)
}

// WarehouseLister says what the last successful warehouse listing saw
// (how many SQL warehouses the credentials can see, how many the
// selection keeps); false before one succeeded. The poller carries it
// into the snapshot, where an empty Operations view is explained by it.
type WarehouseLister interface {
	WarehouseListing() (model.WarehouseListing, bool)
}

// ProxyLister says how each dbxtop proxy read (--proxy) fared at its last
// refresh; the poller carries it into the snapshot (Workspace.Proxies).
type ProxyLister interface {
	ProxyStatuses() []model.ProxyStatus
}

// Discovered is one operation found by discovery, with how to reach it.
type Discovered struct {
	Op  model.Operation
	Ref Ref
}

// StatusSource reports one operation's status.
type StatusSource interface {
	Status(ctx context.Context, ref Ref) (Status, error)
}

// BatchStatusSource confirms many operations' states per request (query
// history filtered by statement ids). StatusBatch makes ONE request for at
// most BatchLimit refs and returns the status of each statement the
// server listed, by statement id; an absent id is not confirmed.
type BatchStatusSource interface {
	StatusBatch(ctx context.Context, refs []Ref) (map[string]Status, error)
	BatchLimit() int
}

// LiveLister is a BatchStatusSource that can also list every live
// statement, a page per call (query history filtered by status): one
// request confirms up to a page of live operations, so a round costs
// ⌈live / page⌉ requests plus id lookups for what the listing missed.
// ListLive makes ONE request; token "" asks for the first page and the
// returned token is "" after the last. Each row is what discovery would
// have made of it, so the engine adopts a statement it did not follow
// yet from the listing itself (Scope.NoLive). The rows are appended to
// dst[:0] (the caller's buffer from the previous page, so that a round
// of ten pages does not allocate ten slices of a thousand operations).
type LiveLister interface {
	ListLive(ctx context.Context, token string, dst []Discovered) ([]Discovered, string, error)
}

// ActionSource cancels and closes operations.
type ActionSource interface {
	Cancel(ctx context.Context, ref Ref) error
	Close(ctx context.Context, ref Ref) error
}

// ActionNamer is implemented by action sources whose calls are not the
// Thrift ones: it names the calls made for ref (CancelExecution and
// CloseStatement for the Statement Execution API), so retries, give-ups
// and events name the call really made.
type ActionNamer interface {
	ActionCalls(ref Ref) (cancel, close string)
}

// CapacitySource lists Vector Search endpoints with their indexes, each
// request through retry. Probe sends one empty upsert to an endpoint's
// index (opt-in).
type CapacitySource interface {
	Endpoints(ctx context.Context, retry Retry) ([]model.Endpoint, error)
	Probe(ctx context.Context, endpoint string) error
}

// IdleCloser is implemented by sources whose HTTP transport can drop its
// idle pooled connections; the policy calls it before retrying after a
// transport error so the retry never reuses the connection that failed.
type IdleCloser interface {
	CloseIdleConnections()
}
