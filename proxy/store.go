package proxy

import (
	"container/heap"
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"github.com/dbxtop/dbxtop/sources"
)

// Defaults of what the proxy remembers (--retain-finished,
// --max-operations): a finished operation is kept for DefaultRetainFinished
// so dbxtop sees how it ended, and at most DefaultMaxOperations operations
// (and as many sessions) are held.
const (
	DefaultRetainFinished = 10 * time.Minute
	DefaultMaxOperations  = 100_000
	maxOpActions          = 16
	// maxEvictPerPass bounds the work one insert or tick spends ageing out,
	// so no single RPC pays for a backlog.
	maxEvictPerPass = 256
)

// session is a client session the upstream confirmed (an OpenSession
// answered with success, or a successful call on it).
type session struct {
	id      string
	secret  []byte
	org     *origin // its operations' origin: path, user agent
	lastRPC time.Time
	// auth is the Authorization header the server last accepted on this
	// session, held in memory only while the session lives and only with
	// --act-as client, so the proxy can close the client's operations
	// with the client's own credentials. Never logged or serialised.
	auth string
	// owner is the hash of that header (kept with --act-as proxy too): a
	// client close is queued only when it came with the owner's
	// credentials.
	owner    authSum
	inflight int
	open     map[*op]struct{} // its open operations (CloseSession closes them)
	learned  bool             // first seen after the proxy started
	// sessions are kept in order of listAt (their last activity, or the
	// last look that kept them) for eviction.
	listAt     time.Time
	prev, next *session
}

// op is one operation the upstream confirmed.
type op struct {
	f      sources.ProxyOperation
	secret []byte
	sess   *session
	org    *origin // what its folded form keeps of f's text
	// auth and owner of an operation learned without its session (it
	// started before the proxy): the credentials the server accepted on it.
	auth  string
	owner authSum
	// Evidence for abandonment: requests in flight on it, whether the last
	// answer reached the client whole, whether result pages remain.
	inflight      int
	undelivered   bool
	moreRows      bool
	closedAt      time.Time
	queued        bool
	closeFails    int
	busy          bool
	closedByProxy bool // the proxy itself closed it: a client's retried close is answered as a success
	queuedAt      time.Time
	// finished list (by closedAt) and timer heap (wake: next look by the
	// close queue or abandonment; hidx -1 when not armed).
	prev, next *op
	wake       time.Time
	hidx       int
}

func (o *op) open() bool {
	return o.f.Close.Outcome == sources.ProxyOpen || o.f.Close.Outcome == sources.ProxyCloseFailed
}

func (o *op) event(now time.Time, kind, msg, creds string) {
	a := &o.f.Actions
	*a = append(*a, sources.ProxyEvent{At: now, Kind: kind, Message: msg, Credentials: creds})
	if len(*a) > maxOpActions {
		*a = (*a)[len(*a)-maxOpActions:]
	}
}

// ownerSum is whose credentials the server accepted for o.
func (o *op) ownerSum() authSum {
	if o.sess != nil {
		return o.sess.owner
	}
	return o.owner
}

// lastActivity is the later of the client's last confirmed call on the
// operation and on its session.
func (o *op) lastActivity() time.Time {
	t := o.f.LastClientRPCAt
	if o.sess != nil && o.sess.lastRPC.After(t) {
		t = o.sess.lastRPC
	}
	return t
}

func (o *op) busyOnWire() bool {
	return o.inflight > 0 || o.sess != nil && o.sess.inflight > 0
}

// timers is a min-heap of operations by wake time: the close queue and
// abandonment look only at operations whose time has come.
type timers []*op

func (h timers) Len() int           { return len(h) }
func (h timers) Less(i, j int) bool { return h[i].wake.Before(h[j].wake) }
func (h timers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *timers) Push(x any) {
	o := x.(*op)
	o.hidx = len(*h)
	*h = append(*h, o)
}
func (h *timers) Pop() any {
	old := *h
	o := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	o.hidx = -1
	return o
}

// store holds what the proxy saw: the ledger of what the server
// confirmed (ledger.go), the close queue's state (queue.go, persist.go)
// and the tables behind them. It owns its lock: the methods in this file
// are its entry points, and each takes the lock for its whole work; the
// methods in other files say "Called with the store locked" and are
// called only from here. Nothing else locks it (TestStoreOwnsItsLock).
// Its lock is never held across I/O.
//
// Every per-RPC operation on it is O(1) or O(log n): maps for look-up,
// a list of finished operations in the order they finished for ageing
// out and eviction, a list of sessions in order of activity, and a heap
// of timers for the close queue and abandonment.
type store struct {
	mu sync.Mutex
	ledgerEnv
	retain   time.Duration
	max      int
	sessions map[string]*session
	ops      map[string]*op
	// finished operations, oldest first
	finHead, finTail *op
	finished         int
	// folds: finished operations in compact form (folded.go), oldest
	// first; they count toward max like any held operation.
	folds foldRing
	// sessions, least recently active first
	sesHead, sesTail *session
	timers           timers
	queued           int
	queuedSet        map[*op]struct{}
	// awaiting: resumed closes waiting for their owner's credentials.
	awaiting   map[authSum]map[*op]struct{}
	queueDirty bool // the close queue changed since it was persisted
	evicted    int64
	// work counts the entries ageing and eviction stepped over: what an
	// insert costs beyond its own O(1) (tests compare it per operation).
	work        int64
	notRecorded int64
	// lastFullLog: the last "table full" log line; lastEvictLog the last
	// eviction line, evictPending the evictions since.
	lastFullLog, lastEvictLog time.Time
	evictPending              int64
	// kept: persisted closes the proxy cannot make.
	kept []persistedClose
}

// ledgerEnv is what recording needs besides the tables; set once by New,
// read-only after.
type ledgerEnv struct {
	o     Options
	clk   retry.Clock
	id    identity
	stats *counters
	log   *slog.Logger
	// unopened counts a call on a session or operation this proxy never
	// saw start (peers.go); it takes no store lock.
	unopened func(op bool, now time.Time)
}

func newStore(retain time.Duration, max int) *store {
	if retain <= 0 {
		retain = DefaultRetainFinished
	}
	if max <= 0 {
		max = DefaultMaxOperations
	}
	return &store{retain: retain, max: max, sessions: map[string]*session{}, ops: map[string]*op{}, queuedSet: map[*op]struct{}{},
		awaiting: map[authSum]map[*op]struct{}{},
		ledgerEnv: ledgerEnv{clk: wallClock{}, stats: &counters{}, log: slog.New(slog.DiscardHandler),
			unopened: func(bool, time.Time) {}}}
}

// warehouseFromPath reads <id> from /sql/1.0/warehouses/<id>.
func warehouseFromPath(p string) string {
	const pre = "/sql/1.0/warehouses/"
	if !strings.HasPrefix(p, pre) {
		return ""
	}
	id := strings.TrimSuffix(p[len(pre):], "/")
	if strings.Contains(id, "/") {
		return ""
	}
	return id
}

// arm sets o's next look (zero disarms).
func (s *store) arm(o *op, at time.Time) {
	if at.IsZero() {
		if o.hidx >= 0 {
			heap.Remove(&s.timers, o.hidx)
		}
		o.wake = time.Time{}
		return
	}
	o.wake = at
	if o.hidx >= 0 {
		heap.Fix(&s.timers, o.hidx)
	} else {
		heap.Push(&s.timers, o)
	}
}

// due pops every operation whose look is due at now.
func (s *store) due(now time.Time) []*op {
	var out []*op
	for len(s.timers) > 0 && !s.timers[0].wake.After(now) {
		o := heap.Pop(&s.timers).(*op)
		o.wake = time.Time{}
		out = append(out, o)
	}
	return out
}

func (s *store) setQueued(o *op, q bool) {
	if o.queued == q {
		return
	}
	o.queued, o.f.Close.Queued = q, q
	s.queueDirty = true
	if q {
		s.queued++
		s.queuedSet[o] = struct{}{}
		if o.queuedAt.IsZero() {
			o.queuedAt = time.Now()
		}
	} else {
		s.queued--
		delete(s.queuedSet, o)
		o.f.Close.NextTry = time.Time{}
	}
}

// await files a resumed close under its owner until the owner returns.
func (s *store) await(o *op) {
	set := s.awaiting[o.owner]
	if set == nil {
		set = map[*op]struct{}{}
		s.awaiting[o.owner] = set
	}
	set[o] = struct{}{}
}

// adopt takes the closes awaiting owner out of waiting.
func (s *store) adopt(owner authSum) []*op {
	set := s.awaiting[owner]
	if set == nil {
		return nil
	}
	delete(s.awaiting, owner)
	out := make([]*op, 0, len(set))
	for o := range set {
		out = append(out, o)
	}
	return out
}

// unawait forgets o's wait (it ended another way).
func (s *store) unawait(o *op) {
	if set := s.awaiting[o.owner]; set != nil {
		delete(set, o)
		if len(set) == 0 {
			delete(s.awaiting, o.owner)
		}
	}
}

// queuedOps lists the queued closes (the queue's own set: no scan).
func (s *store) queuedOps() []*op {
	out := make([]*op, 0, len(s.queuedSet))
	for o := range s.queuedSet {
		out = append(out, o)
	}
	return out
}

// session list

func (s *store) sesUnlink(ss *session) {
	if ss.prev != nil {
		ss.prev.next = ss.next
	} else if s.sesHead == ss {
		s.sesHead = ss.next
	}
	if ss.next != nil {
		ss.next.prev = ss.prev
	} else if s.sesTail == ss {
		s.sesTail = ss.prev
	}
	ss.prev, ss.next = nil, nil
}

func (s *store) sesPushBack(ss *session) {
	ss.prev = s.sesTail
	if s.sesTail != nil {
		s.sesTail.next = ss
	} else {
		s.sesHead = ss
	}
	s.sesTail = ss
}

// touchSession stamps a confirmed call on a session.
func (s *store) touchSession(ss *session, now time.Time) {
	ss.lastRPC = now
	s.requeueSession(ss, now)
}

// requeueSession moves a session to the back of the eviction order
// without touching its activity.
func (s *store) requeueSession(ss *session, now time.Time) {
	ss.listAt = now
	s.sesUnlink(ss)
	s.sesPushBack(ss)
}

// addSession records a session the upstream confirmed; nil when the
// table is full (forwarded, not recorded).
func (s *store) addSession(id string, secret []byte, path, ua string, now time.Time) *session {
	s.age(now)
	if len(s.sessions) >= s.max {
		s.notRecorded++
		s.logNotRecorded(id)
		return nil
	}
	ss := &session{id: id, secret: append([]byte(nil), secret...), lastRPC: now, listAt: now, open: map[*op]struct{}{}}
	ss.org = newOrigin(id, path, ua, ss)
	s.sessions[id] = ss
	s.sesPushBack(ss)
	return ss
}

// dropSession forgets a closed or long-idle session and its credentials.
func (s *store) dropSession(ss *session) {
	ss.auth = ""
	ss.open = nil
	s.sesUnlink(ss)
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
}

// finished list

func (s *store) finPushBack(o *op) {
	o.prev = s.finTail
	if s.finTail != nil {
		s.finTail.next = o
	} else {
		s.finHead = o
	}
	s.finTail = o
	s.finished++
}

func (s *store) finPopFront() *op {
	o := s.finHead
	if o == nil {
		return nil
	}
	s.finHead = o.next
	if s.finHead != nil {
		s.finHead.prev = nil
	} else {
		s.finTail = nil
	}
	o.next = nil
	s.finished--
	return o
}

// held is how many operations the table holds, in either form.
func (s *store) held() int { return len(s.ops) + s.folds.n }

// has says whether the table holds an operation, in either form.
func (s *store) has(id string) bool { return s.ops[id] != nil || s.folds.get(id) != nil }

// addOp records an operation the upstream confirmed, from a request
// without a session the proxy holds; nil when the table is full of open
// operations (forwarded, not recorded, counted).
func (s *store) addOp(id string, secret []byte, path, ua string, now time.Time) *op {
	return s.addOpFrom(id, secret, newOrigin("", path, ua, nil), now)
}

// addOpFrom records an operation from org (its session's, or its own).
func (s *store) addOpFrom(id string, secret []byte, org *origin, now time.Time) *op {
	s.age(now)
	if s.held() >= s.max {
		if !s.dropOldestFinished() {
			s.notRecorded++
			s.logNotRecorded(id)
			return nil
		}
		s.work++
		s.evicted++
		s.evictPending++
		s.logEvictions()
	}
	o := &op{hidx: -1, secret: append([]byte(nil), secret...), org: org, f: sources.ProxyOperation{
		StatementID: id, SessionID: org.sessionID, HTTPPath: org.path, WarehouseID: org.warehouseID,
		ClientApplication: org.app, UserAgent: org.ua,
		State: model.StateUnknown, StartedAt: now, LastClientRPCAt: now,
		Close: sources.ProxyClose{Outcome: sources.ProxyOpen},
	}}
	s.ops[id] = o
	return o
}

// oldestFinished is when the oldest finished operation, in either form,
// closed (ok false: none).
func (s *store) oldestFinished() (at int64, ok bool) {
	if f := s.folds.front(); f != nil {
		at, ok = f.closedAt, true
	}
	if s.finHead != nil && (!ok || s.finHead.closedAt.UnixNano() < at) {
		at, ok = s.finHead.closedAt.UnixNano(), true
	}
	return at, ok
}

// dropOldestFinished forgets the finished operation that closed first,
// in either form; false when none is held.
func (s *store) dropOldestFinished() bool {
	f := s.folds.front()
	if s.finHead != nil && (f == nil || s.finHead.closedAt.UnixNano() < f.closedAt) {
		o := s.finPopFront()
		delete(s.ops, o.f.StatementID)
		return true
	}
	if f == nil {
		return false
	}
	s.folds.pop()
	return true
}

// age forgets finished operations past retention, oldest first, and
// sessions idle past retention with nothing open or in flight; bounded
// work per call.
func (s *store) age(now time.Time) {
	horizon := now.Add(-s.retain).UnixNano()
	for i := 0; i < maxEvictPerPass; i++ {
		if at, ok := s.oldestFinished(); !ok || at >= horizon {
			break
		}
		s.work++
		s.dropOldestFinished()
	}
	for i := 0; i < maxEvictPerPass && s.sesHead != nil && now.Sub(s.sesHead.listAt) > s.retain; i++ {
		s.work++
		ss := s.sesHead
		if len(ss.open) > 0 || ss.inflight > 0 {
			// Still has open operations: looked at again after another
			// retention period; its activity is not touched.
			s.requeueSession(ss, now)
			continue
		}
		s.dropSession(ss)
	}
}

// setClosed ends an operation's open life with an outcome.
func (s *store) setClosed(o *op, outcome string, now time.Time) {
	if !o.open() {
		return
	}
	o.f.Close.Outcome = outcome
	s.setQueued(o, false)
	o.closedAt = now
	if o.f.State.Live() || o.f.State == model.StateUnknown {
		o.f.State = model.StateClosed
	}
	o.auth = ""
	if o.sess != nil {
		delete(o.sess.open, o)
	}
	if len(s.awaiting) > 0 {
		s.unawait(o)
	}
	s.arm(o, time.Time{})
	if foldable(o) {
		s.fold(o)
		return
	}
	s.finPushBack(o)
}

// logNotRecorded reports an operation or session forwarded but not recorded
// because the table is full of open operations: counted always, logged
// at most once a minute. Called with the store locked.
func (s *store) logNotRecorded(id string) {
	now := s.clk.Now()
	if now.Sub(s.lastFullLog) < time.Minute {
		return
	}
	s.lastFullLog = now
	s.log.Warn("table full of open operations: forwarded, not recorded", "handle", id,
		"max_operations", s.max, "not_recorded_total", s.notRecorded)
}

// logEvictions logs the evictions since the last line, at most once a
// minute: at the cap every new operation evicts one, and a line each
// would fill the disk. The metric counts each. Called with the store
// locked.
func (s *store) logEvictions() {
	now := s.clk.Now()
	if s.evictPending == 0 || now.Sub(s.lastEvictLog) < time.Minute {
		return
	}
	s.lastEvictLog = now
	s.log.Warn("finished operations evicted before --retain-finished: the table is full", "evicted", s.evictPending,
		"evicted_total", s.evicted, "max_operations", s.max, "retain_finished", s.retain.String(),
		"fix", "raise --max-operations or lower --retain-finished (held = statements/s × retention)")
	s.evictPending = 0
}

// The store's entry points: each takes the lock for its whole work and
// calls only helpers that expect it held (never another entry point).

// track counts a request in flight on the operation or session it names,
// when the store holds it (observeRequest).
func (s *store) track(rq request) tracked {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trackLocked(rq)
}

// failure records a call that got no usable answer upstream (observeFailure).
func (s *store) failure(rq request, tr tracked, status int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failureLocked(rq, tr, status, err)
}

// reply records what a 200 answer said, once its body ended (observeReply).
func (s *store) reply(rq request, tr tracked, r reply, complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replyLocked(rq, tr, r, complete)
}

// heal notes on the operation rq names that the proxy repeated a call
// (recordHeal); cause is the first failure, cleaned.
func (s *store) heal(rq request, attempts int, ok bool, cause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.healLocked(rq, attempts, ok, cause)
}

// answerForProxy says whether rq is the owner's retried close of a
// handle the proxy closed for it (its INVALID_HANDLE is answered as a
// success), and notes it.
func (s *store) answerForProxy(rq request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, owned := s.owned(rq)
	if o == nil || !owned || !o.closedByProxy {
		return false
	}
	o.event(s.clk.Now(), "client-close-answered", "the client's CloseOperation got INVALID_HANDLE for the handle the proxy had closed for it; answered as a successful close", "")
	s.stats.closeAnswered.Add(1)
	return true
}

// jobs ages the table out and takes the own actions now due (tick).
func (s *store) jobs(now time.Time) []job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobsLocked(now)
}

// release ends an own action on o.
func (s *store) release(o *op) {
	s.mu.Lock()
	o.busy = false
	s.mu.Unlock()
}

// claim marks the operation id busy for a dbxtop action.
func (s *store) claim(id string) (*op, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimLocked(id)
}

// lookup finds an operation for a dbxtop action by statement id.
func (s *store) lookup(id string) (*op, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.actionable(id)
}

// prepare reads what an own call on o needs: the credentials per
// --act-as (cerr when there are none) and the handle.
func (s *store) prepare(ctx context.Context, o *op) (context.Context, string, sources.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cctx, cred, cerr := s.creds(ctx, o)
	return cctx, cred, o.ref(), cerr
}

// event appends an action to o's account.
func (s *store) event(o *op, kind, msg, cred string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o.event(s.clk.Now(), kind, msg, cred)
}

// noAction notes that an own action (kind) could not be taken on o for
// want of credentials, and looks again after another abandonment period.
func (s *store) noAction(o *op, kind string, cerr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	o.event(now, kind, "no action: "+cerr.Error(), "")
	s.arm(o, now.Add(s.o.CloseAbandoned))
}

// closed records the outcome of the proxy's own close of o.
func (s *store) closed(o *op, who, cred string, attempts int, err error, canceled bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closedLocked(o, who, cred, attempts, err, canceled)
}

// gone records the server saying o's handle is gone.
func (s *store) gone(o *op) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markGone(o)
}

// canceled records the proxy's own cancel of o (ok: the server accepted it).
func (s *store) canceled(o *op, ok bool, msg, cred string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok && o.open() {
		o.f.State = model.StateCanceled
	}
	o.event(s.clk.Now(), "canceled", msg, cred)
}

// relayState records the state the server gave the proxy's own status call.
func (s *store) relayState(o *op, st model.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.open() {
		o.f.State = st
	}
}

// armIfOpen files o's next abandonment look at at, if o is still open.
func (s *store) armIfOpen(o *op, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.open() {
		s.arm(o, at)
	}
}

// abandonLook reads what the peers are asked about o: its ids, the
// client's last call on it or its session, and whether result pages are
// left.
func (s *store) abandonLook(o *op) (id, sess string, last time.Time, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return o.f.StatementID, o.f.SessionID, o.lastActivity(), o.moreRows || o.undelivered
}

// peerSawLater records that a peer saw a client call on o or its
// session at last, and looks again at due.
func (s *store) peerSawLater(o *op, last, due time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o.event(s.clk.Now(), "peer-call", "not abandoned: a peer saw a client call on it or its session at "+last.UTC().Format(time.RFC3339), "")
	if o.open() {
		s.arm(o, due)
	}
}

// rearm files o's next abandonment look one window on, with why as an
// event when given; ended, when a peer saw the client close o, records
// it closed instead.
func (s *store) rearm(o *op, why, ended string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	if !o.open() {
		return
	}
	if ended != "" {
		o.event(now, "peer-closed", "a peer saw it end ("+ended+"): not abandoned", "")
		s.setClosed(o, ended, now)
		return
	}
	if why != "" {
		o.event(now, "abandoned", why, "")
	}
	s.arm(o, now.Add(s.o.CloseAbandoned))
}

// lastCall is this proxy's answer to a peer asking about operation id
// and session sess (either may be unknown here; a folded operation is
// known, closed).
func (s *store) lastCall(id, sess string) (a adminapi.LastCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.ops[id]; o != nil {
		a.Known, a.Outcome = true, o.f.Close.Outcome
		a.LastClientCallAt = o.f.LastClientRPCAt
		a.InFlight = o.inflight > 0
		a.Pending = o.moreRows || o.undelivered
		if o.sess != nil && sess == "" {
			sess = o.sess.id
		}
	} else if f := s.folds.get(id); f != nil {
		facts := f.facts()
		a.Known, a.Outcome, a.LastClientCallAt = true, facts.Close.Outcome, facts.LastClientRPCAt
		if sess == "" {
			sess = facts.SessionID
		}
	}
	if ss := s.sessions[sess]; sess != "" && ss != nil {
		a.SessionKnown = true
		a.SessionLastClientCallAt = ss.lastRPC
		a.InFlight = a.InFlight || ss.inflight > 0
	}
	return a
}

// takeQueue lists the close queue to persist, when it changed since the
// last time (or force), and marks it persisted.
func (s *store) takeQueue(force bool) ([]persistedClose, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.queueDirty && !force {
		return nil, false
	}
	s.queueDirty = false
	return s.queueEntries(), true
}

// queueChanged marks the close queue as not persisted (a write failed).
func (s *store) queueChanged() {
	s.mu.Lock()
	s.queueDirty = true
	s.mu.Unlock()
}

// resume queues or keeps the persisted closes read at start.
func (s *store) resume(closes []persistedClose, now time.Time) resumed {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r resumed
	for _, e := range closes {
		s.resumeEntry(e, now, &r)
	}
	s.queueDirty = true
	return r
}

// claimQueued marks every queued close not already in flight busy, and
// lists them (the drain's last flush).
func (s *store) claimQueued() []*op {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*op
	for _, o := range s.queuedOps() {
		if !o.busy {
			o.busy = true
			out = append(out, o)
		}
	}
	return out
}

// openCount is the operations still open that are not the proxy's own
// queued closes (what a drain waits for).
func (s *store) openCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ops) - s.finished - s.queued
}

// counts fills the table's figures into st.
func (s *store) counts(st *Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Operations, st.Evicted, st.NotRecorded = s.held(), s.evicted, s.notRecorded
	st.OpenOperations, st.QueuedCloses, st.Sessions = len(s.ops)-s.finished, s.queued, len(s.sessions)
}

// workDone is the entries ageing and eviction have stepped over so far.
func (s *store) workDone() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.work
}

// keptCloses lists the persisted closes kept for a later start.
func (s *store) keptCloses() []persistedClose {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]persistedClose(nil), s.kept...)
}

// snapshot copies every operation's facts, sorted by start time (the
// admin API's answer: a reader's cost, not a client's).
func (s *store) snapshot() []sources.ProxyOperation {
	s.mu.Lock()
	out := make([]sources.ProxyOperation, 0, s.held())
	for i := 0; i < s.folds.n; i++ {
		out = append(out, s.folds.buf[(s.folds.head+i)%len(s.folds.buf)].facts())
	}
	for _, o := range s.ops {
		f := o.f
		f.Actions = append([]sources.ProxyEvent(nil), o.f.Actions...)
		if o.sess != nil {
			f.SessionLastClientRPCAt = o.sess.lastRPC
		}
		out = append(out, f)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.Before(out[j].StartedAt)
		}
		return out[i].StatementID < out[j].StatementID
	})
	return out
}
