package sim

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Client kinds as reported in /sim/v1/truth.
const (
	KindHealthy    = "healthy"
	KindAbandons   = "abandons"
	KindCloseFails = "close_fails"
	KindIngest     = "ingest"
	// The demo's proxied share (only with Options.Proxy): a client that
	// gives up on its own side within seconds, one whose closes the
	// server refuses for a while, and one that leaves its finished
	// operation open until its pool closes the session.
	KindGivesUp           = "gives_up"
	KindCloseFailsProxied = "close_fails_proxied"
	KindLeaksProxied      = "leaks_proxied"
	KindExternal          = "external"
)

// InactivityMessage is what the reaper fails an orphaned operation with
// (docs/simulator.md, The reaper; dbxtop recognises REAPED from it, docs/model.md).
const InactivityMessage = "Query has been timed out due to inactivity."

type guid = [16]byte

// newGUID returns a version 4, RFC 4122 variant UUID: some drivers parse
// handles with strict UUID libraries.
func newGUID() guid {
	var g guid
	if _, err := rand.Read(g[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	g[6] = g[6]&0x0f | 0x40
	g[8] = g[8]&0x3f | 0x80
	return g
}

func uuidString(g guid) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", g[0:4], g[4:6], g[6:8], g[8:10], g[10:16])
}

type session struct {
	// openOps are the open operations executed on it: closeSession closes
	// them without scanning every operation, and a closed one leaves, so
	// a session that runs statements for hours holds none it closed.
	openOps      map[*operation]struct{}
	guid, secret guid
	warehouse    string
	user, app    string
	kind         string
	lastActivity time.Time // owner calls on the session
	open         bool
	openedAt     time.Time
}

type operation struct {
	guid, secret guid
	id           string
	warehouse    string
	sess         *session
	sql          string
	user, app    string
	kind         string
	plan         plan

	state        model.State // PENDING, RUNNING, FINISHED, FAILED, CANCELED
	open         bool
	created      time.Time
	pendingUntil time.Time
	runUntil     time.Time
	completed    time.Time
	closedAt     time.Time
	errMsg       string
	lastActivity time.Time // owner calls on the operation
	fetchPos     int64

	// observerCloseFailUntil: scripted, observer closes of a close_fails
	// op fail until then (set by the first one), long enough for the
	// observer's retries to give up and show CLOSE_FAILED.
	observerCloseFailUntil time.Time
	pruned                 bool // forgotten by the reaper (left store.order)
	// closeRefusedUntil: scripted, the upstream refuses every close of a
	// proxied close_fails op until then (set at its first close).
	closeRefusedUntil time.Time
}

// before orders operations by (created, id) ascending.
func before(a, b *operation) bool {
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	return a.id < b.id
}

// ownerLast is the owning client's last activity: on the operation or on
// its session.
func (op *operation) ownerLast() time.Time {
	t := op.lastActivity
	if op.sess != nil && op.sess.lastActivity.After(t) {
		t = op.sess.lastActivity
	}
	return t
}

// counters are cumulative (they survive pruning).
type counters struct {
	closed, canceled, reapedInactive, reapedUnclosed int64
}

// store holds sessions and operations and runs their state machine. Every
// method takes the lock and first advances time-driven transitions, so a
// reader always sees the state as of now.
type store struct {
	mu        sync.Mutex
	clock     Clock
	idle      time.Duration
	leak      time.Duration
	retention time.Duration
	sessions  map[guid]*session
	ops       map[guid]*operation
	byID      map[string]*operation
	c         counters
	// order holds every operation by (created, id) ascending, so that a
	// query-history page is a binary search and a walk, not a sort of
	// 100,000 operations per request. unsorted is set when an insert broke
	// the order (a clock that stepped back); the next reader sorts.
	order    []*operation
	unsorted bool
	// closedQ holds closed operations in the order they closed (entries
	// already pruned are skipped), so that the reaper forgets the oldest
	// closed first once more than maxClosed are held; nClosed counts the
	// closed operations still held.
	closedQ   []*operation
	nClosed   int
	maxClosed int
}

// maxClosedOps bounds the closed operations the simulator keeps for truth
// and query history, whatever Retention and the statement rate: a long
// soak or demo stays bounded in memory. Open operations are never
// forgotten (the load scenario serves up to 100,000 of them).
const maxClosedOps = 100_000

func newStore(clock Clock, idle, leak, retention time.Duration) *store {
	return &store{
		clock: clock, idle: idle, leak: leak, retention: retention,
		sessions: map[guid]*session{}, ops: map[guid]*operation{}, byID: map[string]*operation{},
		maxClosed: maxClosedOps,
	}
}

// advance applies the time-driven transitions of one operation.
func advance(op *operation, now time.Time) {
	if op.state == model.StatePending && !now.Before(op.pendingUntil) {
		op.state = model.StateRunning
	}
	if op.state == model.StateRunning && !now.Before(op.runUntil) {
		op.completed = op.runUntil
		if op.plan.failMsg != "" {
			op.state = model.StateFailed
			op.errMsg = op.plan.failMsg
		} else {
			op.state = model.StateFinished
		}
	}
}

func (s *store) openSession(warehouse, user, app, kind string, owner bool) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	ss := &session{guid: newGUID(), secret: newGUID(), warehouse: warehouse, user: user,
		app: app, kind: kind, open: true, openedAt: now, openOps: map[*operation]struct{}{}}
	if owner {
		ss.lastActivity = now
	}
	s.sessions[ss.guid] = ss
	return ss
}

func (s *store) session(g guid) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[g]
	if !ok || !ss.open {
		return nil, false
	}
	return ss, true
}

// closeSession closes the session and every operation still open on it,
// as HiveServer2 does.
func (s *store) closeSession(g guid, owner bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[g]
	if !ok || !ss.open {
		return false
	}
	now := s.clock.Now()
	if owner {
		ss.lastActivity = now
	}
	ss.open = false
	for op := range ss.openOps { // the session's own: not a scan of the workspace
		advance(op, now)
		if !op.state.Terminal() {
			op.state = model.StateCanceled
			op.completed = now
			s.c.canceled++
		}
		s.closeLocked(op, now)
	}
	delete(s.sessions, g)
	return true
}

// execute creates an operation on an open session. p.runFor == 0 finishes
// it at once.
func (s *store) execute(ss *session, sql string, p plan, owner bool, adjust func(*operation)) *operation {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if owner {
		ss.lastActivity = now
	}
	g := newGUID()
	op := &operation{
		guid: g, secret: newGUID(), id: uuidString(g), warehouse: ss.warehouse, sess: ss,
		sql: sql, user: ss.user, app: ss.app, kind: ss.kind, plan: p,
		state: model.StatePending, open: true, created: now, lastActivity: now,
	}
	// Queue for a quarter of the run, at most a second, then run.
	q := p.runFor / 4
	if q > time.Second {
		q = time.Second
	}
	op.pendingUntil = now.Add(q)
	op.runUntil = now.Add(p.runFor)
	if adjust != nil {
		adjust(op)
	}
	advance(op, now)
	s.add(op)
	return op
}

// add records a new operation (with the lock held), keeping store.order
// sorted or marked for sorting.
func (s *store) add(op *operation) {
	s.ops[op.guid] = op
	s.byID[op.id] = op
	if op.sess != nil && op.open {
		op.sess.openOps[op] = struct{}{}
	}
	if !op.open {
		s.closedQ = append(s.closedQ, op)
		s.nClosed++
	}
	if n := len(s.order); n > 0 && before(op, s.order[n-1]) {
		s.unsorted = true
	}
	s.order = append(s.order, op)
}

// withOp runs f on the operation with that GUID (any state, even closed),
// after advancing it. owner marks the call as the owning client's activity.
func (s *store) withOp(g guid, owner bool, f func(op *operation, now time.Time)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	op, ok := s.ops[g]
	if !ok {
		return false
	}
	now := s.clock.Now()
	advance(op, now)
	if owner && op.open {
		op.lastActivity = now
		if op.sess != nil {
			op.sess.lastActivity = now
		}
	}
	f(op, now)
	return true
}

// sessionSecretMatches reports whether secret is the session's handle
// secret.
func (s *store) sessionSecretMatches(g guid, secret []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[g]
	return ok && subtle.ConstantTimeCompare(ss.secret[:], secret) == 1
}

// secretMatches reports whether secret is the operation's handle secret.
func (s *store) secretMatches(g guid, secret []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	op, ok := s.ops[g]
	return ok && subtle.ConstantTimeCompare(op.secret[:], secret) == 1
}

func (s *store) lookupID(id string) (guid, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op, ok := s.byID[id]
	if !ok {
		return guid{}, false
	}
	return op.guid, true
}

// cancelLocked moves a live operation to CANCELED; a terminal one is left
// as it is (HiveServer2 answers success either way).
func (s *store) cancelLocked(op *operation, now time.Time) {
	if op.open && !op.state.Terminal() {
		op.state = model.StateCanceled
		op.completed = now
		op.errMsg = "Operation was canceled by the client."
		s.c.canceled++
	}
}

func (s *store) closeLocked(op *operation, now time.Time) {
	if !op.open {
		return
	}
	if !op.state.Terminal() {
		// Closing a running operation cancels it first.
		op.state = model.StateCanceled
		op.completed = now
		s.c.canceled++
	}
	s.markClosed(op, now)
}

// markClosed is the one place an open operation becomes closed.
func (s *store) markClosed(op *operation, now time.Time) {
	op.open = false
	op.closedAt = now
	s.c.closed++
	if op.sess != nil {
		delete(op.sess.openOps, op)
	}
	s.closedQ = append(s.closedQ, op)
	s.nClosed++
}

// prune forgets a closed operation (truth and history).
func (s *store) prune(op *operation) {
	delete(s.ops, op.guid)
	delete(s.byID, op.id)
	op.pruned = true
	s.nClosed--
}

// reap runs one reaper pass: inactive live operations fail, terminal
// unclosed ones are closed, long-closed ones are forgotten, and so are
// the oldest closed beyond maxClosed.
func (s *store) reap() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	pruned := false
	for _, op := range s.ops {
		advance(op, now)
		if op.open && !op.state.Terminal() && now.Sub(op.ownerLast()) >= s.idle {
			op.state = model.StateFailed
			op.errMsg = InactivityMessage
			op.completed = now
			s.c.reapedInactive++
		}
		if op.open && op.state.Terminal() && now.Sub(op.completed) >= s.leak {
			s.markClosed(op, now)
			s.c.reapedUnclosed++
		}
		if !op.open && now.Sub(op.closedAt) >= s.retention {
			s.prune(op)
			pruned = true
		}
	}
	// Oldest closed first, past the cap; entries pruned above leave too.
	i := 0
	for ; i < len(s.closedQ); i++ {
		op := s.closedQ[i]
		if !op.pruned {
			if s.nClosed <= s.maxClosed {
				break
			}
			s.prune(op)
			pruned = true
		}
		s.closedQ[i] = nil // the backing array must not keep it alive
	}
	s.closedQ = s.closedQ[i:]
	if pruned {
		s.order = slices.DeleteFunc(s.order, func(op *operation) bool { return op.pruned })
	}
	// Sessions nobody uses and that hold nothing open are dropped.
	for g, ss := range s.sessions {
		if now.Sub(ss.lastActivity) < s.leak || now.Sub(ss.openedAt) < s.leak {
			continue
		}
		if len(ss.openOps) == 0 {
			delete(s.sessions, g)
		}
	}
}

// opView is a copy of an operation for readers outside the lock.
type opView struct {
	ID, Warehouse, SQL, User, App, Kind string
	State                               model.State // execution state (kept after close)
	Open                                bool
	Created, Completed, OwnerLast       time.Time
	ErrMsg                              string
	Rows                                int64
	SessionID                           string
}

func (s *store) views() []opView {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	out := make([]opView, 0, len(s.ops))
	for _, op := range s.ops {
		advance(op, now)
		out = append(out, viewOf(op))
	}
	// Newest first, then by id, so listings are stable.
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].ID > out[j].ID
	})
	return out
}

func viewOf(op *operation) opView {
	v := opView{ID: op.id, Warehouse: op.warehouse, SQL: op.sql, User: op.user, App: op.app,
		Kind: op.kind, State: op.state, Open: op.open, Created: op.created,
		Completed: op.completed, OwnerLast: op.ownerLast(), ErrMsg: op.errMsg}
	if op.state == model.StateFinished {
		v.Rows = op.plan.rows
	}
	if op.sess != nil {
		v.SessionID = uuidString(op.sess.guid)
	}
	return v
}

// opStats are the operation figures of /sim/v1/stats.
type opStats struct {
	Open             int64 `json:"open"`
	Running          int64 `json:"running"`
	TerminalUnclosed int64 `json:"terminal_unclosed"`
	Closed           int64 `json:"closed"`
	Canceled         int64 `json:"canceled"`
	ReapedInactive   int64 `json:"reaped_inactive"`
	ReapedUnclosed   int64 `json:"reaped_unclosed"`
}

func (s *store) stats() opStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	st := opStats{Closed: s.c.closed, Canceled: s.c.canceled,
		ReapedInactive: s.c.reapedInactive, ReapedUnclosed: s.c.reapedUnclosed}
	for _, op := range s.ops {
		advance(op, now)
		if !op.open {
			continue
		}
		st.Open++
		if op.state.Terminal() {
			st.TerminalUnclosed++
		} else {
			st.Running++
		}
	}
	return st
}

// liveWarehouses is the set of warehouses with a PENDING or RUNNING
// operation (they are not idle, whatever their request traffic).
func (s *store) liveWarehouses() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	out := map[string]bool{}
	for _, op := range s.ops {
		advance(op, now)
		if op.open && !op.state.Terminal() {
			out[op.warehouse] = true
		}
	}
	return out
}

// addClosed records a statement that already ran and was closed (history
// from before the simulator started): it is in query history and truth,
// and its handle is closed.
func (s *store) addClosed(warehouse, user, app, sql string, started, completed time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := newGUID()
	op := &operation{
		guid: g, secret: newGUID(), id: uuidString(g), warehouse: warehouse,
		sql: sql, user: user, app: app, kind: KindExternal,
		state: model.StateFinished, open: false, created: started, pendingUntil: started,
		runUntil: completed, completed: completed, closedAt: completed, lastActivity: completed,
	}
	s.add(op)
}
