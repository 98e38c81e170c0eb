package proxy

import (
	"bytes"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// The compact form. An operation that ended and closed cleanly — its
// client's close succeeded, or the server closed it (direct results,
// CloseSession) — with nothing else to tell (no proxy action, heal or
// error on it) is folded at once from its full record (op, several
// hundred bytes and a dozen pointers) into a folded entry: what dbxtop
// reads of it (its close outcome "closed" stops dbxtop flagging it; the
// client's last call; when it started) in about a hundred bytes, with
// one pointer to an origin its session shares. The full record stays
// for what can matter: open, close failed or queued, closed or acted on
// by the proxy, gone, unobserved, healed. Folded entries age out and are
// evicted like finished ones, oldest first (docs/proxy.md "Memory").

// origin is where operations came from: the session (or, without one
// the proxy knows, the request) that started them. A session's
// operations share its origin, so a folded operation holds its text in
// one pointer.
type origin struct {
	sessionID, path, warehouseID, app, ua string
	sess                                  *session // nil: no session the proxy holds
}

func newOrigin(sessionID, path, ua string, ss *session) *origin {
	return &origin{sessionID: sessionID, path: path, warehouseID: warehouseFromPath(path),
		app: clean(sources.ClientApplication(ua)), ua: clean(ua), sess: ss}
}

// maxFoldedSecret: a handle secret longer than this (a real server's is
// 16 bytes) keeps its operation's full record.
const maxFoldedSecret = 16

// folded is a cleanly closed operation in compact form.
type folded struct {
	id        string
	org       *origin
	state     model.State
	started   int64 // Unix nanoseconds
	lastRPC   int64
	closedAt  int64
	attempts  int32 // the client's CloseOperation calls
	secret    [maxFoldedSecret]byte
	secretLen uint8
	byServer  bool // closed by the server, not by the client's close
	learned   bool
}

func (f *folded) secretIs(b []byte) bool {
	return bytes.Equal(f.secret[:f.secretLen], b)
}

// facts is the admin API's account of a folded operation.
func (f *folded) facts() sources.ProxyOperation {
	out := sources.ProxyOperation{StatementID: f.id, SessionID: f.org.sessionID, HTTPPath: f.org.path,
		WarehouseID: f.org.warehouseID, ClientApplication: f.org.app, UserAgent: f.org.ua, State: f.state,
		StartedAt: time.Unix(0, f.started), LastClientRPCAt: time.Unix(0, f.lastRPC),
		Close: sources.ProxyClose{Outcome: sources.ProxyClosed, ClientAttempts: int(f.attempts)}, LearnedAfterStart: f.learned}
	if f.byServer {
		out.Close.Outcome = sources.ProxyClosedByServer
	}
	if f.org.sess != nil {
		out.SessionLastClientRPCAt = f.org.sess.lastRPC
	}
	return out
}

// foldable says whether a closed operation has nothing to tell beyond
// the compact form.
func foldable(o *op) bool {
	c := &o.f.Close
	return (c.Outcome == sources.ProxyClosed || c.Outcome == sources.ProxyClosedByServer) &&
		len(o.f.Actions) == 0 && o.f.Heals == 0 && c.ClientError == nil && c.LastError == nil &&
		c.ProxyAttempts == 0 && o.closeFails == 0 && o.f.Unobserved == "" && !o.closedByProxy &&
		!o.busy && !o.queued && o.inflight == 0 && o.hidx < 0 && len(o.secret) <= maxFoldedSecret && o.org != nil
}

// fold replaces a closed operation's full record by its compact form.
// Called with the store locked.
func (s *store) fold(o *op) {
	f := folded{id: o.f.StatementID, org: o.org, state: o.f.State, started: o.f.StartedAt.UnixNano(),
		lastRPC: o.f.LastClientRPCAt.UnixNano(), closedAt: o.closedAt.UnixNano(), attempts: int32(o.f.Close.ClientAttempts),
		byServer: o.f.Close.Outcome == sources.ProxyClosedByServer,
		learned:  o.f.LearnedAfterStart}
	f.secretLen = uint8(copy(f.secret[:], o.secret))
	if s.ops[f.id] == o {
		delete(s.ops, f.id)
	}
	s.folds.push(f, s.max)
}

// foldedCalled records an answer to a call on a folded operation: as on
// any closed one, the client's activity (and its session's) and its
// close attempts; nothing else changes once closed. A call on it that
// got no answer (observeFailure) is not counted. Called with the store
// locked.
func (s *store) foldedCalled(f *folded, rq request, ok bool, now time.Time) {
	if !f.secretIs(rq.secret) {
		s.stats.mismatched.Add(1)
		return
	}
	if rq.call == "CloseOperation" {
		f.attempts++
	}
	if !ok {
		return
	}
	f.lastRPC = now.UnixNano()
	if ss := f.org.sess; ss != nil && ss.open != nil { // a dropped session keeps no credentials
		s.touchSession(ss, now)
		s.setAuth(&ss.auth, &ss.owner, rq)
	}
}

// errFolded answers a dbxtop action on a folded operation: the server
// already confirmed its close, so nothing is sent.
func errFolded(f *folded) error {
	return &foldedError{id: f.id, byServer: f.byServer}
}

type foldedError struct {
	id       string
	byServer bool
}

func (e *foldedError) Error() string {
	by := "its client's close succeeded"
	if e.byServer {
		by = "the server closed it"
	}
	return "operation " + e.id + " is already closed (" + by + "): nothing sent"
}

func (e *foldedError) Unwrap() error { return sources.ErrHandleGone }

// foldRing holds folded operations in the order they closed, oldest
// first, in a ring that grows up to the table's cap; at indexes them by
// statement id (a sequence number: the ring's position moves).
type foldRing struct {
	buf  []folded
	head int    // the oldest entry's index in buf
	n    int    // entries held
	seq0 uint64 // the oldest entry's sequence number
	at   map[string]uint64
}

func (r *foldRing) get(id string) *folded {
	q, ok := r.at[id]
	if !ok {
		return nil
	}
	return &r.buf[(r.head+int(q-r.seq0))%len(r.buf)]
}

// push appends f; the caller keeps the table within max.
func (r *foldRing) push(f folded, limit int) {
	if r.n == len(r.buf) {
		r.grow(limit)
	}
	r.buf[(r.head+r.n)%len(r.buf)] = f
	if r.at == nil {
		r.at = map[string]uint64{}
	}
	r.at[f.id] = r.seq0 + uint64(r.n)
	r.n++
}

func (r *foldRing) grow(limit int) {
	c := min(max(2*len(r.buf), 64), limit)
	if c <= r.n {
		c = r.n + 1 // never full: the caller evicts first at the cap
	}
	buf := make([]folded, c)
	for i := 0; i < r.n; i++ {
		buf[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = buf, 0
}

// front is the oldest entry (nil when empty).
func (r *foldRing) front() *folded {
	if r.n == 0 {
		return nil
	}
	return &r.buf[r.head]
}

// pop forgets the oldest entry.
func (r *foldRing) pop() {
	f := &r.buf[r.head]
	if q, ok := r.at[f.id]; ok && q == r.seq0 {
		delete(r.at, f.id)
	}
	*f = folded{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	r.seq0++
}
