package poller

import (
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// ledger is what the engine believes about each followed operation: the
// operations (store: by id, in order, the live ones), each one's cached
// view and the flags last compared (viewCache), and the closes dbxtop
// owes (closeQueue). Its methods are its only writers: each takes its
// lock and queues the view of what it changed for the next comparison,
// so no caller keeps a view current by hand. The rules for how long a
// belief holds and how often it is asked again are in belief.go.
//
// Lock order: Engine.mu, then ledger.mu. The engine writes through the
// ledger with its own lock held and reads entries under it; a snapshot
// reads the views under the ledger's lock alone.
type ledger struct {
	mu     sync.Mutex
	ops    store
	views  viewCache
	closes closeQueue
	th     model.Thresholds // the rules' (belief.go)
	// The bound on ended operations (bound.go): max (0: MaxEnded, < 0:
	// none), how many it dropped, and the dropped ids a listing still
	// shows, by the full discovery that last listed them.
	max     int
	dropped int64
	tomb    map[string]uint64
}

func newLedger(th model.Thresholds, maxEnded int) ledger {
	return ledger{ops: newStore(), views: newViewCache(th), closes: closeQueue{}, th: th, max: maxEnded}
}

// get is the followed operation with this id (nil: none).
func (l *ledger) get(id string) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops.get(id)
}

// update runs fn, the one write to en, and queues en's view for the next
// comparison. fn writes en's operation and belief fields only: it must
// not call the ledger.
func (l *ledger) update(en *entry, fn func(en *entry)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	fn(en)
}

// add follows a new operation; it is counted live once its first state
// is known (addLive).
func (l *ledger) add(en *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	l.ops.add(en)
}

// addLive counts en live if it is (a source may take back an end).
func (l *ledger) addLive(en *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops.addLive(en)
}

// retire stops counting en as followed; it stays for retainFor.
func (l *ledger) retire(en *entry, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	l.ops.retire(en, now)
}

// listed marks en as listed by this live listing round, and as seen
// before the next full discovery (sweep).
func (l *ledger) listed(en *entry, round uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if round != 0 {
		en.listed = round
	}
	en.seen = l.ops.gen + 1
}

// sweep, after a full discovery, forgets the retired operations it did
// not list that were retired more than retainFor ago.
func (l *ledger) sweep(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops.countLive()
	l.ops.sweep(now, l.views.forget)
	l.sweepDropped()
}

// live is the number of live operations at the last count, plus those
// added since.
func (l *ledger) live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops.n
}

// countLive counts the live operations again and returns how many.
func (l *ledger) countLive() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops.countLive()
}

// size is the number of operations in the ledger, retired ones too.
func (l *ledger) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ops.ops)
}

// eachLive calls fn for the live operations (some may have ended since
// the last count), in the order they were followed.
func (l *ledger) eachLive(fn func(en *entry)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, en := range l.ops.live {
		fn(en)
	}
}

// sampleLive calls fn for at most n live operations, spread evenly over
// them, after counting them again; it returns how many are live.
func (l *ledger) sampleLive(n int, fn func(en *entry)) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops.countLive()
	live := l.ops.live
	for i, step := 0, max(1, len(live)/n); i < len(live); i += step {
		fn(live[i])
	}
	return l.ops.n
}

// followed is the number of operations not retired.
func (l *ledger) followed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, en := range l.ops.ordered() { // a slice: a map walk was a tenth of a refresh
		if !en.retired {
			n++
		}
	}
	return n
}

// viewsAt is every operation's view at now, in statement id order. Views
// are shared with earlier snapshots and evaluated again only when their
// operation changed or a deadline came (model.ViewCache).
func (l *ledger) viewsAt(now time.Time) model.Views {
	l.mu.Lock()
	defer l.mu.Unlock()
	ens := l.ops.ordered() // kept in order as operations arrive: no sort here
	views := model.MakeViews(len(ens))
	for _, en := range ens {
		views.Add(l.views.view(en, now))
	}
	return views
}

// compare emits the flag changes of the operations whose view may have
// changed, and of the endpoints' views.
func (l *ledger) compare(now time.Time, eps []model.Endpoint, emit func(model.Event)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.compare(now, emit)
	for _, ep := range eps {
		v := model.NewEndpointView(ep, now)
		key := "endpoint:" + v.Name
		if len(v.Flags) > 0 || l.views.flags[key] != nil {
			l.views.diff(key, "", v.Name, v.Flags, nil, now, emit)
		}
	}
}

// queueClose queues en's close (its op.Close.NextTry says when).
func (l *ledger) queueClose(en *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closes.add(en)
}

// dequeueClose takes en out of the close queue.
func (l *ledger) dequeueClose(en *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closes.remove(en)
}

// startClose marks en's close in flight; false when one already is.
func (l *ledger) startClose(en *entry) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if en.closing {
		return false
	}
	en.closing = true
	return true
}

// closesDue starts the queued closes whose time came (marked in flight)
// and returns when the next one is (zero: none waits).
func (l *ledger) closesDue(now time.Time) ([]*entry, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	due, next := l.closes.due(now)
	for _, en := range due {
		en.closing = true
	}
	return due, next
}

// queued lists the queued closes.
func (l *ledger) queued() []*entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := make([]*entry, 0, len(l.closes))
	for _, en := range l.closes {
		q = append(q, en)
	}
	return q
}

// check reports the first broken invariant of the store and the views.
func (l *ledger) check(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ops.check(); err != nil {
		return err
	}
	return l.views.check(l.ops.ordered(), now)
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
