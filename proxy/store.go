package proxy

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// Bounds of what the proxy remembers: a closed operation is kept for
// retention (so dbxtop sees how it ended), and at most maxOps operations
// are held; the oldest closed ones go first, and evictions are counted.
const (
	retention    = 10 * time.Minute
	maxOps       = 100_000
	maxOpActions = 16
)

// session is a client session seen through the proxy.
type session struct {
	id      string
	path    string
	ua      string
	lastRPC time.Time
	// auth is the client's Authorization header, held in memory only while
	// the session lives, so the proxy can close the client's operations
	// with the client's own credentials. Never logged or serialised.
	auth   string
	closed bool
}

// op is one operation seen through the proxy.
type op struct {
	f      sources.ProxyOperation
	secret []byte
	sess   *session
	// closedAt is when the operation stopped being open (any outcome).
	closedAt time.Time
	// queue state
	queued     bool
	closeFails int
	busy       bool
	// abandonLook: no abandonment action before this (one that found no
	// credentials waits another --close-abandoned period).
	abandonLook time.Time
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

type store struct {
	mu       sync.Mutex
	sessions map[string]*session
	ops      map[string]*op
	evicted  int64
}

func newStore() *store {
	return &store{sessions: map[string]*session{}, ops: map[string]*op{}}
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

// touchSession records a client call on a session; it creates the record
// when the proxy did not see the session open (it started before the proxy).
func (s *store) touchSession(id, path, ua, auth string, now time.Time) *session {
	ss := s.sessions[id]
	if ss == nil {
		ss = &session{id: id, path: path}
		s.sessions[id] = ss
	}
	ss.ua, ss.lastRPC = ua, now
	if auth != "" && !ss.closed {
		ss.auth = auth
	}
	return ss
}

// touchOp records a client call on an operation.
func (s *store) touchOp(id string, secret []byte, path, ua, auth string, now time.Time) *op {
	o := s.ops[id]
	if o == nil {
		o = s.addOp(id, secret, path, ua, now)
	}
	if len(o.secret) == 0 && len(secret) > 0 {
		o.secret = append([]byte(nil), secret...)
	}
	o.f.LastClientRPCAt = now
	if o.sess != nil {
		o.sess.lastRPC = now
		o.f.SessionLastClientRPCAt = now
		if auth != "" && !o.sess.closed {
			o.sess.auth = auth
		}
	}
	return o
}

func (s *store) addOp(id string, secret []byte, path, ua string, now time.Time) *op {
	s.evict(now)
	o := &op{secret: append([]byte(nil), secret...), f: sources.ProxyOperation{
		StatementID: id, HTTPPath: path, WarehouseID: warehouseFromPath(path),
		ClientApplication: clean(sources.ClientApplication(ua)), UserAgent: clean(ua),
		State: model.StateUnknown, StartedAt: now, LastClientRPCAt: now,
		Close: sources.ProxyClose{Outcome: sources.ProxyOpen},
	}}
	s.ops[id] = o
	return o
}

// evict forgets closed operations past retention, and when the table is
// full the oldest closed ones; it never forgets an open operation.
func (s *store) evict(now time.Time) {
	for id, o := range s.ops {
		if !o.open() && !o.closedAt.IsZero() && now.Sub(o.closedAt) > retention {
			delete(s.ops, id)
		}
	}
	for id, ss := range s.sessions {
		if ss.closed && now.Sub(ss.lastRPC) > retention {
			delete(s.sessions, id)
		}
	}
	if len(s.ops) < maxOps {
		return
	}
	var closed []*op
	for _, o := range s.ops {
		if !o.open() {
			closed = append(closed, o)
		}
	}
	sort.Slice(closed, func(i, j int) bool { return closed[i].closedAt.Before(closed[j].closedAt) })
	for _, o := range closed[:min(len(closed), len(s.ops)-maxOps+1)] {
		delete(s.ops, o.f.StatementID)
		s.evicted++
	}
}

// setClosed ends an operation's open life with an outcome.
func (o *op) setClosed(outcome string, now time.Time) {
	o.f.Close.Outcome = outcome
	o.f.Close.Queued, o.f.Close.NextTry = false, time.Time{}
	o.queued = false
	o.closedAt = now
	if o.f.State.Live() || o.f.State == model.StateUnknown {
		o.f.State = model.StateClosed
	}
}

// snapshot copies every operation's facts, sorted by start time.
func (s *store) snapshot() []sources.ProxyOperation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sources.ProxyOperation, 0, len(s.ops))
	for _, o := range s.ops {
		f := o.f
		f.Actions = append([]sources.ProxyEvent(nil), o.f.Actions...)
		if o.sess != nil {
			f.SessionLastClientRPCAt = o.sess.lastRPC
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.Before(out[j].StartedAt)
		}
		return out[i].StatementID < out[j].StatementID
	})
	return out
}
