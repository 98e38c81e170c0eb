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
	var tr tracked
	if rq.opID == "" && rq.sessionID == "" {
		return tr
	}
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	if rq.opID != "" {
		if o := p.st.ops[rq.opID]; o != nil {
			o.inflight++
			tr.o = o
		}
	} else if ss := p.st.sessions[rq.sessionID]; ss != nil {
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
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	tr.release()
	if rq.call != "CloseOperation" || rq.opID == "" || refused(status) {
		return
	}
	o, owned := p.owned(rq)
	if o == nil || !owned {
		return
	}
	o.f.Close.ClientAttempts++
	p.clientCloseFailed(o, err)
}

// owned finds the operation rq names and says whether rq carried exactly
// the handle secret and the credentials the server accepted for it.
// Called with the store locked.
func (p *Proxy) owned(rq request) (*op, bool) {
	o := p.st.ops[rq.opID]
	if o == nil {
		return nil, false
	}
	return o, bytes.Equal(o.secret, rq.secret) && p.id.sum(rq.auth) == o.ownerSum()
}

// clientCloseFailed queues a close the client could not make: the client
// got the real error; the proxy retries after the drivers' own close
// retries are over, until it succeeds or the handle is gone. Called with
// the store locked.
func (p *Proxy) clientCloseFailed(o *op, err error) {
	if !o.open() {
		return
	}
	now := p.clk.Now()
	info := cleanInfo(retry.ErrorInfoOf(err))
	o.f.Close.Outcome = sources.ProxyCloseFailed
	o.f.Close.ClientError = info
	o.f.Close.LastError = info
	if !o.queued {
		p.st.setQueued(o, true)
		// The client may still be retrying its own close: the queue's first
		// try waits past the drivers' retries (docs/proxy.md).
		o.f.Close.NextTry = now.Add(p.o.CloseDefer)
		p.st.arm(o, o.f.Close.NextTry)
		p.stats.closesQueued.Add(1)
		o.event(now, "close-queued", "the client's CloseOperation failed upstream ("+info.Message+"); queued for the proxy to close", "")
		p.log.Info("close queued", "statement_id", o.f.StatementID, "cause", info.Message, "first_try", o.f.Close.NextTry.UTC())
	}
}

func (p *Proxy) markGone(o *op) {
	p.st.setClosed(o, sources.ProxyGone, p.clk.Now())
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
	now := p.clk.Now()
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	tr.release()
	if !r.ok {
		p.unobserved(rq, r, now)
		return
	}
	ok := success(r, rq.call)
	if !ok {
		p.stats.refusedCalls.Add(1)
	}
	if len(p.st.awaiting) > 0 {
		// The server answered this credential (a refusal is an HTTP 401
		// or 403, never a reply): its owner's resumed closes may go ahead.
		p.adoptOwner(rq.auth, now)
	}
	switch rq.call {
	case "OpenSession":
		if ok {
			p.sessionOpened(rq, r, now)
		}
	case "ExecuteStatement", "GetTypeInfo", "GetCatalogs", "GetSchemas", "GetTables", "GetTableTypes",
		"GetColumns", "GetFunctions", "GetPrimaryKeys", "GetCrossReference":
		// Calls that return an operation handle.
		if ok {
			p.opStarted(rq, r, complete, now)
		}
	case "CloseSession":
		if ok {
			p.sessionClosed(rq, now)
		}
	default:
		p.opCalled(rq, r, ok, complete, now)
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
func (p *Proxy) unobserved(rq request, r reply, now time.Time) {
	o := p.st.ops[rq.opID]
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
	p.st.setClosed(o, sources.ProxyUnobserved, now)
	o.f.State = model.StateUnknown
	p.log.Warn("operation unobserved", "statement_id", o.f.StatementID, "reason", why)
}

// sessionOpened records a session the server opened. Called with the
// store locked.
func (p *Proxy) sessionOpened(rq request, r reply, now time.Time) {
	if r.sessionID == "" || p.st.sessions[r.sessionID] != nil {
		return
	}
	if ss := p.st.addSession(r.sessionID, r.sessSecret, rq.path, rq.ua, now); ss != nil {
		p.setAuth(&ss.auth, &ss.owner, rq.auth)
	}
}

// opStarted records the operation handle a successful call returned, in
// its session when the proxy knows it. Called with the store locked.
func (p *Proxy) opStarted(rq request, r reply, complete bool, now time.Time) {
	if r.opID == "" || p.st.ops[r.opID] != nil {
		return
	}
	ss := p.sessionFor(rq, now)
	path, ua := rq.path, rq.ua
	if ss != nil {
		path, ua = ss.path, ss.ua
	}
	o := p.st.addOp(r.opID, r.secret, path, ua, now)
	if o == nil {
		return
	}
	o.f.SessionID = rq.sessionID
	if ss != nil {
		o.sess = ss
		ss.open[o] = struct{}{}
		o.f.SessionLastClientRPCAt = ss.lastRPC
	} else {
		p.setAuth(&o.auth, &o.owner, rq.auth)
	}
	if r.state != nil {
		o.f.State = *r.state
	}
	o.moreRows, o.undelivered = r.moreRows, !complete
	if r.directClosed {
		p.st.setClosed(o, sources.ProxyClosedByServer, now)
		return
	}
	p.armAbandon(o, now)
}

// sessionClosed closes a session the server closed, and its operations
// with it (as HiveServer2 does). Called with the store locked.
func (p *Proxy) sessionClosed(rq request, now time.Time) {
	ss := p.st.sessions[rq.sessionID]
	if ss == nil || !bytes.Equal(ss.secret, rq.sessSecret) {
		return
	}
	for o := range ss.open {
		p.st.setClosed(o, sources.ProxyClosedByServer, now)
	}
	p.st.dropSession(ss)
}

// opCalled records the answer to a call on an operation handle: its new
// state, a close, a cancel, or the handle gone. Called with the store
// locked.
func (p *Proxy) opCalled(rq request, r reply, ok, complete bool, now time.Time) {
	if rq.opID == "" {
		return
	}
	o := p.st.ops[rq.opID]
	if o == nil {
		if ok && rq.call != "CloseOperation" {
			p.learn(rq, r, complete, now)
		}
		return
	}
	if !bytes.Equal(o.secret, rq.secret) {
		// Another handle under the same GUID: not this operation's.
		p.stats.mismatched.Add(1)
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
		p.markGone(o)
		return
	}
	if !ok {
		if rq.call == "CloseOperation" && p.id.sum(rq.auth) == o.ownerSum() {
			p.clientCloseFailed(o, serr)
		}
		return
	}
	p.confirmed(o, rq, now)
	o.undelivered = !complete
	if rq.call == "FetchResults" {
		o.moreRows = r.moreRows
	}
	if r.state != nil && o.open() {
		o.f.State = *r.state
	}
	switch rq.call {
	case "CloseOperation":
		p.st.setClosed(o, sources.ProxyClosed, now)
	case "CancelOperation":
		if o.f.State.Live() {
			o.f.State = model.StateCanceled
		}
	}
}

// confirmed stamps a successful call on o: the client's activity, and
// the credentials the server just accepted (a refreshed token replaces
// the old one). Called with the store locked.
func (p *Proxy) confirmed(o *op, rq request, now time.Time) {
	o.f.LastClientRPCAt = now
	if o.sess != nil && o.sess.open != nil { // a dropped session keeps no credentials
		p.st.touchSession(o.sess, now)
		o.f.SessionLastClientRPCAt = now
		p.setAuth(&o.sess.auth, &o.sess.owner, rq.auth)
		return
	}
	if o.open() {
		p.setAuth(&o.auth, &o.owner, rq.auth)
	}
}

// sessionFor finds the session an ExecuteStatement the server accepted
// ran in, learning it when the proxy had not seen it open. Called with
// the store locked.
func (p *Proxy) sessionFor(rq request, now time.Time) *session {
	if rq.sessionID == "" {
		return nil
	}
	ss := p.st.sessions[rq.sessionID]
	if ss != nil && !bytes.Equal(ss.secret, rq.sessSecret) {
		return nil
	}
	if ss == nil {
		ss = p.st.addSession(rq.sessionID, rq.sessSecret, rq.path, rq.ua, now)
		if ss == nil {
			return nil
		}
		ss.learned = true
		p.unopened(false, now)
	} else {
		p.st.touchSession(ss, now)
	}
	p.setAuth(&ss.auth, &ss.owner, rq.auth)
	return ss
}

// learn records an operation the proxy first sees through a successful
// call on it (it started before the proxy, or its start was not
// recorded). Called with the store locked.
func (p *Proxy) learn(rq request, r reply, complete bool, now time.Time) {
	o := p.st.addOp(rq.opID, rq.secret, rq.path, rq.ua, now)
	if o == nil {
		return
	}
	o.f.LearnedAfterStart = true
	p.unopened(true, now)
	p.setAuth(&o.auth, &o.owner, rq.auth)
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
	p.armAbandon(o, now)
}

// setAuth keeps the credentials the server accepted: their hash always,
// the header itself only with --act-as client.
func (p *Proxy) setAuth(auth *string, owner *authSum, h string) {
	if h == "" {
		return
	}
	*owner = p.id.sum(h)
	if p.o.ActAs == ActAsClient {
		*auth = h
	}
}

// armAbandon sets an open operation's first abandonment look.
func (p *Proxy) armAbandon(o *op, now time.Time) {
	if p.o.CloseAbandoned > 0 && o.open() && o.hidx < 0 {
		p.st.arm(o, now.Add(p.o.CloseAbandoned))
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
	now := p.clk.Now()
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	o := p.st.ops[rq.opID]
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
