package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// The ledger: what the server confirmed to each client, recorded in the
// store from decoded answers (transport.go hands them over). Only a
// server's answer to an authenticated call is recorded.

// tracked is what a request counted as in flight, released when its
// answer ends.
type tracked struct {
	o  *op
	ss *session
}

// observeRequest notes a request in flight on the operation or session it
// names, when the proxy holds it. Nothing is recorded or stamped before
// the server answers: a request proves nothing about who sent it.
func (p *Proxy) observeRequest(rq request) tracked {
	if rq.opID == "" && rq.sessionID == "" {
		return tracked{}
	}
	return p.st.track(rq)
}

// trackLocked counts rq in flight on what it names. Called with the store
// locked.
func (s *store) trackLocked(rq request) tracked {
	var tr tracked
	if rq.opID != "" {
		if o := s.ops[rq.opID]; o != nil {
			o.inflight++
			tr.o = o
		}
	} else if ss := s.sessions[rq.sessionID]; ss != nil {
		ss.inflight++
		tr.ss = ss
	}
	return tr
}

// release ends a request's in-flight count. Called with the store locked.
func (tr tracked) release() {
	if tr.o != nil {
		tr.o.inflight--
	}
	if tr.ss != nil {
		tr.ss.inflight--
	}
}

// refused says whether an HTTP status is the server refusing the
// request's credentials or permissions.
func refused(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// observeFailure records a call that got no usable answer upstream: an
// HTTP error (status) or none at all (status 0).
func (p *Proxy) observeFailure(rq request, tr tracked, status int, err error) {
	switch {
	case refused(status):
		p.stats.refused.Add(1)
		p.metrics.outcome(rq.call, outcomeRefused)
	case status != 0:
		p.metrics.outcome(rq.call, outcomeHTTPError)
	default:
		p.metrics.outcome(rq.call, outcomeNoAnswer)
	}
	p.st.failure(rq, tr, status, err)
}

// failureLocked records a call that got no usable answer: only a
// client's own close of an operation it owns counts. Called with the
// store locked.
func (s *store) failureLocked(rq request, tr tracked, status int, err error) {
	tr.release()
	if rq.call != "CloseOperation" || rq.opID == "" || refused(status) {
		return
	}
	o, owned := s.owned(rq)
	if o == nil || !owned {
		return
	}
	o.f.Close.ClientAttempts++
	s.clientCloseFailed(o, err)
}

// owned finds the operation rq names and says whether rq carried exactly
// the handle secret and the credentials the server accepted for it.
// Called with the store locked.
func (s *store) owned(rq request) (*op, bool) {
	o := s.ops[rq.opID]
	if o == nil {
		return nil, false
	}
	return o, bytes.Equal(o.secret, rq.secret) && rq.owner == o.ownerSum()
}

// clientCloseFailed queues a close the client could not make: the client
// got the real error; the proxy retries after the drivers' own close
// retries are over, until it succeeds or the handle is gone. Called with
// the store locked.
func (s *store) clientCloseFailed(o *op, err error) {
	if !o.open() {
		return
	}
	now := s.clk.Now()
	info := cleanInfo(retry.ErrorInfoOf(err))
	o.f.Close.Outcome = sources.ProxyCloseFailed
	o.f.Close.ClientError = info
	o.f.Close.LastError = info
	if !o.queued {
		s.setQueued(o, true)
		// The client may still be retrying its own close: the queue's first
		// try waits past the drivers' retries (docs/proxy.md).
		o.f.Close.NextTry = now.Add(s.o.CloseDefer)
		s.arm(o, o.f.Close.NextTry)
		s.stats.closesQueued.Add(1)
		o.event(now, "close-queued", "the client's CloseOperation failed upstream ("+info.Message+"); queued for the proxy to close", "")
		s.log.Info("close queued", "statement_id", o.f.StatementID, "cause", info.Message, "first_try", o.f.Close.NextTry.UTC())
	}
}

func (s *store) markGone(o *op) {
	s.setClosed(o, sources.ProxyGone, s.clk.Now())
}

// success says whether a decoded answer is the server accepting the call.
func success(r reply, call string) bool {
	return r.ok && r.exception == "" && r.statusErr(call) == nil
}

// observeReply records what a 200 answer said, once its body ended
// (complete: the client received all of it). Only what the server
// confirmed is recorded: a handle it returned, or a successful call on a
// handle (learned after start when the proxy had not seen it).
func (p *Proxy) observeReply(rq request, tr tracked, r reply, complete bool) {
	p.countReply(rq, r)
	p.st.reply(rq, tr, r, complete)
}

// replyLocked records a decoded answer (observeReply). Called with the
// store locked.
func (s *store) replyLocked(rq request, tr tracked, r reply, complete bool) {
	now := s.clk.Now()
	tr.release()
	if !r.ok {
		s.unobserved(rq, r, now)
		return
	}
	ok := success(r, rq.call)
	if !ok {
		s.stats.refusedCalls.Add(1)
	}
	if len(s.awaiting) > 0 {
		// The server answered this credential (a refusal is an HTTP 401
		// or 403, never a reply): its owner's resumed closes may go ahead.
		s.adoptOwner(rq, now)
	}
	switch rq.call {
	case "OpenSession":
		if ok {
			s.sessionOpened(rq, r, now)
		}
	case "ExecuteStatement", "GetTypeInfo", "GetCatalogs", "GetSchemas", "GetTables", "GetTableTypes",
		"GetColumns", "GetFunctions", "GetPrimaryKeys", "GetCrossReference":
		// Calls that return an operation handle.
		if ok {
			s.opStarted(rq, r, complete, now)
		}
	case "CloseSession":
		if ok {
			s.sessionClosed(rq, now)
		}
	default:
		s.opCalled(rq, r, ok, complete, now)
	}
}

// countReply counts the answer's outcome by call.
func (p *Proxy) countReply(rq request, r reply) {
	switch {
	case !isFollowed(rq.call):
		p.metrics.outcome(rq.call, outcomeForwarded)
	case !r.ok:
		p.stats.undecodable.Add(1)
		if r.why != "" {
			p.stats.unobserved.Add(1)
		}
		p.metrics.outcome(rq.call, outcomeUndecodable)
	case success(r, rq.call):
		p.metrics.outcome(rq.call, outcomeOK)
	default:
		p.metrics.outcome(rq.call, outcomeErrorStatus)
	}
}

// unobserved marks the open operation an unreadable answer concerned.
// What the server said is unknown: not followed as if open forever;
// forgotten after retention like a finished one. Called with the store
// locked.
func (s *store) unobserved(rq request, r reply, now time.Time) {
	o := s.ops[rq.opID]
	if o == nil || !o.open() || !isFollowed(rq.call) || !bytes.Equal(o.secret, rq.secret) {
		return
	}
	why := r.why
	if why == "" {
		why = "its " + rq.call + " answer was not a Thrift reply the proxy could read"
	}
	o.f.Unobserved = why
	o.f.State = model.StateUnknown
	o.event(now, "unobserved", why, "")
	s.setClosed(o, sources.ProxyUnobserved, now)
	o.f.State = model.StateUnknown
	s.log.Warn("operation unobserved", "statement_id", o.f.StatementID, "reason", why)
}

// sessionOpened records a session the server opened. Called with the
// store locked.
func (s *store) sessionOpened(rq request, r reply, now time.Time) {
	if r.sessionID == "" || s.sessions[r.sessionID] != nil {
		return
	}
	if ss := s.addSession(r.sessionID, r.sessSecret, rq.path, rq.ua, now); ss != nil {
		s.setAuth(&ss.auth, &ss.owner, rq)
	}
}

// opStarted records the operation handle a successful call returned, in
// its session when the proxy knows it. Called with the store locked.
func (s *store) opStarted(rq request, r reply, complete bool, now time.Time) {
	if r.opID == "" || s.has(r.opID) {
		return
	}
	ss := s.sessionFor(rq, now)
	var org *origin
	if ss != nil {
		org = ss.org
	} else {
		org = newOrigin(rq.sessionID, rq.path, rq.ua, nil)
	}
	o := s.addOpFrom(r.opID, r.secret, org, now)
	if o == nil {
		return
	}
	if ss != nil {
		o.sess = ss
		ss.open[o] = struct{}{}
		o.f.SessionLastClientRPCAt = ss.lastRPC
	} else {
		s.setAuth(&o.auth, &o.owner, rq)
	}
	if r.state != nil {
		o.f.State = *r.state
	}
	o.moreRows, o.undelivered = r.moreRows, !complete
	if r.directClosed {
		s.setClosed(o, sources.ProxyClosedByServer, now)
		return
	}
	s.armAbandon(o, now)
}

// sessionClosed closes a session the server closed, and its operations
// with it (as HiveServer2 does). Called with the store locked.
func (s *store) sessionClosed(rq request, now time.Time) {
	ss := s.sessions[rq.sessionID]
	if ss == nil || !bytes.Equal(ss.secret, rq.sessSecret) {
		return
	}
	for o := range ss.open {
		s.setClosed(o, sources.ProxyClosedByServer, now)
	}
	s.dropSession(ss)
}

// opCalled records the answer to a call on an operation handle: its new
// state, a close, a cancel, or the handle gone. Called with the store
// locked.
func (s *store) opCalled(rq request, r reply, ok, complete bool, now time.Time) {
	if rq.opID == "" {
		return
	}
	o := s.ops[rq.opID]
	if o == nil {
		if f := s.folds.get(rq.opID); f != nil {
			s.foldedCalled(f, rq, ok, now)
			return
		}
		if ok && rq.call != "CloseOperation" {
			s.learn(rq, r, complete, now)
		}
		return
	}
	if !bytes.Equal(o.secret, rq.secret) {
		// Another handle under the same GUID: not this operation's.
		s.stats.mismatched.Add(1)
		return
	}
	if rq.call == "CloseOperation" {
		o.f.Close.ClientAttempts++
		if ok && o.closedByProxy {
			return // the client's retried close, answered for the proxy's
		}
	}
	serr := r.statusErr(rq.call)
	if errors.Is(serr, sources.ErrHandleGone) {
		// The server accepted the credentials and says the handle is gone.
		s.markGone(o)
		return
	}
	if !ok {
		if rq.call == "CloseOperation" && rq.owner == o.ownerSum() {
			s.clientCloseFailed(o, serr)
		}
		return
	}
	s.confirmed(o, rq, now)
	o.undelivered = !complete
	if rq.call == "FetchResults" {
		o.moreRows = r.moreRows
	}
	if r.state != nil && o.open() {
		o.f.State = *r.state
	}
	switch rq.call {
	case "CloseOperation":
		s.setClosed(o, sources.ProxyClosed, now)
	case "CancelOperation":
		if o.f.State.Live() {
			o.f.State = model.StateCanceled
		}
	}
}

// confirmed stamps a successful call on o: the client's activity, and
// the credentials the server just accepted (a refreshed token replaces
// the old one). Called with the store locked.
func (s *store) confirmed(o *op, rq request, now time.Time) {
	o.f.LastClientRPCAt = now
	if o.sess != nil && o.sess.open != nil { // a dropped session keeps no credentials
		s.touchSession(o.sess, now)
		o.f.SessionLastClientRPCAt = now
		s.setAuth(&o.sess.auth, &o.sess.owner, rq)
		return
	}
	if o.open() {
		s.setAuth(&o.auth, &o.owner, rq)
	}
}

// sessionFor finds the session an ExecuteStatement the server accepted
// ran in, learning it when the proxy had not seen it open. Called with
// the store locked.
func (s *store) sessionFor(rq request, now time.Time) *session {
	if rq.sessionID == "" {
		return nil
	}
	ss := s.sessions[rq.sessionID]
	if ss != nil && !bytes.Equal(ss.secret, rq.sessSecret) {
		return nil
	}
	if ss == nil {
		ss = s.addSession(rq.sessionID, rq.sessSecret, rq.path, rq.ua, now)
		if ss == nil {
			return nil
		}
		ss.learned = true
		s.unopened(false, now)
	} else {
		s.touchSession(ss, now)
	}
	s.setAuth(&ss.auth, &ss.owner, rq)
	return ss
}

// learn records an operation the proxy first sees through a successful
// call on it (it started before the proxy, or its start was not
// recorded). Called with the store locked.
func (s *store) learn(rq request, r reply, complete bool, now time.Time) {
	o := s.addOp(rq.opID, rq.secret, rq.path, rq.ua, now)
	if o == nil {
		return
	}
	o.f.LearnedAfterStart = true
	s.unopened(true, now)
	s.setAuth(&o.auth, &o.owner, rq)
	if r.state != nil {
		o.f.State = *r.state
	}
	o.undelivered = !complete
	if rq.call == "FetchResults" {
		o.moreRows = r.moreRows
	}
	if rq.call == "CancelOperation" && o.f.State.Live() {
		o.f.State = model.StateCanceled
	}
	o.event(now, "learned", rq.call+" succeeded on an operation the proxy had not seen start", "")
	s.armAbandon(o, now)
}

// setAuth keeps the credentials the server accepted: their hash always,
// the header itself only with --act-as client.
func (s *store) setAuth(auth *string, owner *authSum, rq request) {
	if rq.auth == "" {
		return
	}
	*owner = rq.owner
	if s.o.ActAs == ActAsClient {
		*auth = rq.auth
	}
}

// armAbandon sets an open operation's first abandonment look.
func (s *store) armAbandon(o *op, now time.Time) {
	if s.o.CloseAbandoned > 0 && o.open() && o.hidx < 0 {
		s.arm(o, now.Add(s.o.CloseAbandoned))
	}
}

// recordHeal notes that the proxy repeated a client's call.
func (p *Proxy) recordHeal(rq request, attempts int, ok bool, first error) {
	cause := ""
	if first != nil {
		cause = clean(retry.ErrorInfoOf(first).Message)
	}
	if ok {
		p.stats.healed.Add(1)
		p.log.Info("healed", "call", rq.call, "statement_id", rq.opID, "attempts", attempts, "first_failure", cause)
	} else {
		p.stats.healFailed.Add(1)
		p.log.Warn("heal failed", "call", rq.call, "statement_id", rq.opID, "attempts", attempts, "first_failure", cause)
	}
	if rq.opID == "" {
		return
	}
	p.st.heal(rq, attempts, ok, cause)
}

// healLocked notes a heal on the operation rq names. Called with the
// store locked.
func (s *store) healLocked(rq request, attempts int, ok bool, cause string) {
	now := s.clk.Now()
	o := s.ops[rq.opID]
	if o == nil {
		return
	}
	if ok {
		o.f.Heals++
		o.event(now, "healed", fmt.Sprintf("%s succeeded on attempt %d after %s", rq.call, attempts, clean(cause)), "client")
	} else {
		o.event(now, "heal-failed", fmt.Sprintf("%s still failed after %s (first: %s)", rq.call, textfmt.Plural(int64(attempts), "attempt", "attempts"), clean(cause)), "client")
	}
}
