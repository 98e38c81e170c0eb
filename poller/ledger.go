package poller

import "github.com/dbxtop/dbxtop/model"

// ledger is the engine's book of what it believes about each followed
// operation: the operations themselves (store: by id, in order, the live
// ones), each one's cached view and the flags last compared (viewCache),
// and the closes dbxtop owes (closeQueue). How long a belief holds and
// how often it is asked again are the rules of belief.go. It is written
// under the engine's lock (Engine.mu); every write to an operation goes
// with book.views.touch, which queues its view for the next comparison.
type ledger struct {
	ops    store
	views  viewCache
	closes closeQueue
}

// engineAccount is the engine's own account of its work, for snapshots
// and Health: the workspace's errors (by call or kind), the last error
// and the last retried attempt, RunOnce rounds, per-operation polls and
// the freshness last measured. Written under Engine.mu.
type engineAccount struct {
	wsErrs    map[string]model.ErrorInfo
	lastErr   *model.ErrorInfo
	lastRetry *model.ErrorInfo
	round     uint64 // RunOnce rounds
	polls     int64  // per-operation status polls made
	fresh     Freshness
}
