package poller

import (
	"bytes"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
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

// describe applies a listing's descriptive fields to en (warehouse,
// user, client, text, start, the handle's secret) where they differ.
func (l *ledger) describe(en *entry, d *sources.Discovered) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := &en.op
	// Usually nothing here changes: written, and the view touched, only
	// when something does.
	if !differs(o.WarehouseID, d.Op.WarehouseID) && !differs(o.User, d.Op.User) &&
		!differs(o.ClientApplication, d.Op.ClientApplication) && !differs(o.SQL, d.Op.SQL) &&
		(!o.StartedAt.IsZero() || d.Op.StartedAt.IsZero()) &&
		(len(d.Ref.Secret) == 0 || bytes.Equal(en.ref.Secret, d.Ref.Secret)) {
		return
	}
	l.views.touch(en)
	setIf(&o.WarehouseID, d.Op.WarehouseID)
	setIf(&o.User, d.Op.User)
	setIf(&o.ClientApplication, d.Op.ClientApplication)
	setIf(&o.SQL, d.Op.SQL)
	if o.StartedAt.IsZero() {
		o.StartedAt = d.Op.StartedAt
	}
	if len(d.Ref.Secret) > 0 {
		en.ref.Secret = d.Ref.Secret
	}
}

// retried counts a retried status attempt.
func (l *ledger) retried(en *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	en.op.Poll.Retries++
}

// unread gives en, whose status a RunOnce round did not read, that
// reason when it has no error of its own.
func (l *ledger) unread(en *entry, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if en.op.LastError == nil {
		l.views.touch(en)
		en.op.LastError = &model.ErrorInfo{Kind: model.KindCanceled, Call: CallStatus, Message: msg}
	}
}

// adopt makes en dbxtop's to close once it ends.
func (l *ledger) adopt(en *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	en.op.Adopted = true
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

// queueClose queues en's close to run now.
func (l *ledger) queueClose(en *entry, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	en.op.Close.State, en.op.Close.NextTry = model.ClosePending, now
	l.closes.add(en)
}

// startClose marks an operator's close of en in flight (pending, unless
// queued already); false when one already is.
func (l *ledger) startClose(en *entry) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if en.closing {
		return false
	}
	en.closing = true
	if !en.queued {
		l.views.touch(en)
		en.op.Close.State = model.ClosePending
	}
	return true
}

// closeAttempted records n close attempts on en, no longer in flight.
func (l *ledger) closeAttempted(en *entry, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	en.closing = false
	en.op.Close.Attempts += n
}

// closeFailed records a failed close round and queues the next try,
// after a wait that grows with the failures in a row (r: a random draw
// for its jitter); it returns the wait.
func (l *ledger) closeFailed(en *entry, info *model.ErrorInfo, now time.Time, r float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	en.closeFails++
	wait := retry.CloseRetryWait(int(en.closeFails), r)
	c := &en.op.Close
	c.State, c.LastError, c.NextTry = model.CloseFailed, info, now.Add(wait)
	en.op.LastError = info
	l.closes.add(en)
	return wait
}

// closed records that en is closed and leaves the close queue; the
// caller retires it.
func (l *ledger) closed(en *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	c := &en.op.Close
	c.State, c.LastError, c.NextTry = model.CloseClosed, nil, time.Time{}
	en.op.Open, en.op.OpenByProxy = boolRef(false), false
	en.closeFails = 0
	l.closes.remove(en)
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
