package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Bounds on what the proxy reads of a body to observe it. Bodies are
// streamed; only these prefixes are kept in memory.
const (
	// maxRequestBuffer: a request up to this size is held whole so a
	// healing retry can resend it; a larger one (a huge SQL text) is
	// streamed and neither decoded nor healed.
	maxRequestBuffer = 1 << 20
	// replyPrefix: how much of an answer is kept to decode; the status
	// comes first, so FetchResults needs little.
	replyPrefix      = 4 << 20
	fetchReplyPrefix = 64 << 10
	maxErrorBody     = 64 << 10
)

// healable are the idempotent RPCs the proxy repeats on a fresh
// connection when the upstream leg fails in transport or with a retryable
// status (docs/proxy.md "Healing").
var healable = map[string]bool{
	"GetOperationStatus":   true,
	"GetResultSetMetadata": true,
	"CloseOperation":       true,
	"CancelOperation":      true,
	"CloseSession":         true,
	"GetInfo":              true,
}

// observer is ReverseProxy's transport: it reads the request (bounded),
// forwards it (healing when allowed) and wraps the answer's body so it is
// observed as it streams to the client.
type observer struct{ p *Proxy }

func (t *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.roundTrip(req)
	if accepted(req, resp) {
		markAuthenticated(req.Context())
	}
	return resp, err
}

func (t *observer) roundTrip(req *http.Request) (*http.Response, error) {
	p := t.p
	if strings.HasPrefix(req.URL.Path, "/api/") {
		return t.restRoundTrip(req) // REST: forwarded unchanged (vector.go)
	}
	if req.Method != http.MethodPost || req.Body == nil || req.Body == http.NoBody {
		p.stats.untouched.Add(1)
		return p.up.RoundTrip(req)
	}
	prefix, err := io.ReadAll(io.LimitReader(req.Body, maxRequestBuffer+1))
	if err != nil {
		_ = req.Body.Close()
		return nil, &clientError{err: err}
	}
	if len(prefix) > maxRequestBuffer {
		// Too large to hold: stream it on, observed by name only.
		p.stats.tooLarge.Add(1)
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(prefix), req.Body), req.Body}
		name, _ := thrift.PeekCallName(prefix)
		p.countCall(name)
		return p.up.RoundTrip(req)
	}
	_ = req.Body.Close()
	rq := decodeRequest(prefix)
	if slot, _ := req.Context().Value(callKey{}).(*callSlot); slot != nil {
		slot.name = rq.call
	}
	p.countCall(rq.call)
	if rq.call != "" && !rq.decoded && isFollowed(rq.call) {
		p.stats.undecodable.Add(1)
	}
	if rq.call == "OpenSession" && p.draining.Load() {
		return p.refuseOpenSession(req), nil
	}
	rq.path, rq.ua, rq.auth = req.URL.Path, req.Header.Get("User-Agent"), req.Header.Get("Authorization")
	tr := p.observeRequest(rq)

	call := retry.Call{Name: rq.call, OpID: rq.opID}
	switch {
	case !p.o.Heal || rq.call == "":
		return t.once(req, rq, tr, prefix)
	case healable[rq.call]:
		call.Safe = true
	case rq.call == "ExecuteStatement":
		// Repeated only when it provably never reached the upstream (the
		// policy retries a failed dial even for unsafe calls; every other
		// failure may have executed it).
	default:
		// FetchResults (FETCH_NEXT moves a cursor), OpenSession, unknown.
		return t.once(req, rq, tr, prefix)
	}
	return t.healed(req, rq, tr, prefix, call)
}

func isFollowed(call string) bool {
	switch call {
	case "OpenSession", "CloseSession", "ExecuteStatement", "GetOperationStatus", "GetResultSetMetadata",
		"FetchResults", "CancelOperation", "CloseOperation":
		return true
	}
	return metadataCalls[call]
}

// once forwards with a single attempt.
func (t *observer) once(req *http.Request, rq request, tr tracked, body []byte) (*http.Response, error) {
	resp, err := t.attempt(req.Context(), req, rq.call, body, false)
	if err != nil && resp == nil {
		t.p.observeFailure(rq, tr, 0, err)
		return nil, err
	}
	return t.p.observeResponse(rq, tr, resp, 1), nil
}

// healed runs the call under the retry policy, on a fresh connection after
// a transport error, within the client's own request (its context ends
// when the client gives up).
func (t *observer) healed(req *http.Request, rq request, tr tracked, body []byte, call retry.Call) (*http.Response, error) {
	var last *http.Response
	attempts := 0
	var firstErr error
	err := t.p.pol.Do(req.Context(), call, func(actx context.Context) error {
		attempts++
		if last != nil {
			_ = last.Body.Close()
			last = nil
		}
		resp, err := t.attempt(actx, req, rq.call, body, sources.FreshConnRequested(actx))
		last = resp
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if err != nil && !call.Safe && resp != nil {
			// ExecuteStatement reached the server and got an answer: it is
			// the client's to judge, never repeated.
			return nil
		}
		return err
	})
	if attempts > 1 {
		t.p.recordHeal(rq, attempts, err == nil || last != nil && last.StatusCode == http.StatusOK, firstErr)
	}
	if last != nil {
		// The upstream's own last answer (maybe an error) goes back as it is.
		return t.p.observeResponse(rq, tr, last, attempts), nil
	}
	t.p.observeFailure(rq, tr, 0, err)
	return nil, err
}

// attempt makes one upstream round trip. The request's context is the
// client's; actx (the policy's attempt deadline) bounds only the wait for
// the answer's headers, so a long body keeps streaming after the attempt
// is over. A non-200 answer's body (small) is read and returned with an
// *sources.HTTPError for the policy to classify.
func (t *observer) attempt(actx context.Context, req *http.Request, call string, body []byte, fresh bool) (*http.Response, error) {
	p := t.p
	rctx, cancel := context.WithCancel(req.Context())
	out := req.Clone(rctx)
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header.Set("Content-Length", strconv.Itoa(len(body)))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	tr := p.up
	if !healable[call] {
		tr = p.recent
	}
	if fresh {
		tr = p.fresh
		p.stats.freshConns.Add(1)
	}
	stop := context.AfterFunc(actx, cancel)
	t0 := time.Now()
	resp, err := tr.RoundTrip(out)
	p.metrics.upstream(call, time.Since(t0))
	if err != nil {
		stop()
		cancel()
		if actx.Err() != nil && req.Context().Err() == nil {
			err = &attemptTimeout{err: err}
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		stop()
		cancel()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		resp.Header.Del("Transfer-Encoding")
		return resp, sources.ParseHTTPError(call, resp.StatusCode, resp.Header, b)
	}
	if !stop() {
		// The attempt deadline fired as the headers arrived: the body is
		// being cut, so this attempt failed.
		_ = resp.Body.Close()
		cancel()
		return nil, &attemptTimeout{err: context.DeadlineExceeded}
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// clientError is the client's own failure to send its request (a body
// cut short, or not sent within the read deadline): the client's, never
// counted as an upstream failure.
type clientError struct{ err error }

func (e *clientError) Error() string { return "reading the client's request: " + e.err.Error() }
func (e *clientError) Unwrap() error { return e.err }

// attemptTimeout is the policy's per-attempt deadline passing while the
// client still waits: a transport timeout for classification.
type attemptTimeout struct{ err error }

func (e *attemptTimeout) Error() string {
	return "no answer within the attempt deadline: " + e.err.Error()
}
func (e *attemptTimeout) Unwrap() error   { return e.err }
func (e *attemptTimeout) Timeout() bool   { return true }
func (e *attemptTimeout) Temporary() bool { return true }

var _ net.Error = (*attemptTimeout)(nil)

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// observeResponse wraps the answer's body: its first bytes are kept as
// they stream to the client, and decoded once the body ends or is closed.
func (p *Proxy) observeResponse(rq request, tr tracked, resp *http.Response, attempts int) *http.Response {
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body) // already bounded and buffered by attempt
		resp.Body = io.NopCloser(bytes.NewReader(b))
		p.observeFailure(rq, tr, resp.StatusCode, sources.ParseHTTPError(rq.call, resp.StatusCode, resp.Header, b))
		return resp
	}
	if rq.call == "" {
		return resp
	}
	if rq.call == "CloseOperation" && rq.opID != "" {
		return p.observeClose(rq, tr, resp)
	}
	limit := replyPrefix
	if rq.call == "FetchResults" {
		limit = fetchReplyPrefix
	}
	h := resp.Header.Clone()
	resp.Body = &teeBody{rc: resp.Body, limit: limit, done: func(prefix []byte, complete bool) {
		plain, ok := decodeBody(h, prefix, limit)
		if !ok {
			p.observeReply(rq, tr, reply{why: "answered in Content-Encoding " + clean(h.Get("Content-Encoding")) + ", which the proxy cannot decode"}, complete)
			return
		}
		p.observeReply(rq, tr, decodeReply(rq.call, plain), complete)
	}}
	return resp
}

// observeClose reads a client's CloseOperation answer whole (it is a few
// bytes) so that, when the server says INVALID_HANDLE for exactly the
// handle and secret the proxy itself closed, with the credentials the
// server accepted for it, the client is told its close succeeded: the
// proxy's close was the client's, made for it. Every other answer goes
// back as it came.
func (p *Proxy) observeClose(rq request, tr tracked, resp *http.Response) *http.Response {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
	if err != nil || len(b) > maxErrorBody {
		// Not a close answer the proxy can judge: streamed on as it is.
		resp.Body = &teeBody{rc: struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}, limit: maxErrorBody, done: func(prefix []byte, complete bool) {
			p.observeReply(rq, tr, reply{}, complete)
		}}
		return resp
	}
	_ = resp.Body.Close()
	plain, decodable := decodeBody(resp.Header, b, maxErrorBody)
	r := reply{}
	if decodable {
		r = decodeReply(rq.call, plain)
	}
	if out := p.closedByProxyAnswer(rq, r, plain); out != nil {
		b = out
		resp.Header.Del("Content-Encoding")
		r = decodeReply(rq.call, out)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	resp.Header.Del("Transfer-Encoding")
	p.observeReply(rq, tr, r, true)
	return resp
}

// closedByProxyAnswer is a successful CloseOperation answer to replace
// r, or nil when r is not INVALID_HANDLE for a handle the proxy closed
// for this very client.
func (p *Proxy) closedByProxyAnswer(rq request, r reply, body []byte) []byte {
	if !r.ok || r.status == nil || r.status.StatusCode != tc.TStatusCode_INVALID_HANDLE_STATUS {
		return nil
	}
	p.st.mu.Lock()
	o, owned := p.owned(rq)
	ok := o != nil && owned && o.closedByProxy
	if ok {
		now := p.clk.Now()
		o.event(now, "client-close-answered", "the client's CloseOperation got INVALID_HANDLE for the handle the proxy had closed for it; answered as a successful close", "")
		p.stats.closeAnswered.Add(1)
	}
	p.st.mu.Unlock()
	if !ok {
		return nil
	}
	ctx := context.Background()
	_, _, seq, err := thrift.NewReadProtocol(body).ReadMessageBegin(ctx)
	if err != nil {
		return nil
	}
	buf := athrift.NewTMemoryBuffer()
	out := athrift.NewTBinaryProtocolConf(buf, nil)
	_ = out.WriteMessageBegin(ctx, rq.call, athrift.REPLY, seq)
	res := &tc.TCLIServiceCloseOperationResult{Success: &tc.TCloseOperationResp{Status: &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}}}
	if res.Write(ctx, out) != nil || out.WriteMessageEnd(ctx) != nil {
		return nil
	}
	p.log.Info("client close answered as success", "statement_id", rq.opID,
		"evidence", "INVALID_HANDLE for the handle and secret the proxy closed, with the owner's credentials")
	return buf.Bytes()
}

// teeBody keeps at most limit bytes of what passes through.
type teeBody struct {
	rc    io.ReadCloser
	limit int
	buf   []byte
	once  sync.Once
	done  func(prefix []byte, complete bool)
}

func (b *teeBody) Read(q []byte) (int, error) {
	n, err := b.rc.Read(q)
	if room := b.limit - len(b.buf); room > 0 && n > 0 {
		b.buf = append(b.buf, q[:min(n, room)]...)
	}
	if err != nil {
		b.finish(errors.Is(err, io.EOF))
	}
	return n, err
}

func (b *teeBody) Close() error {
	err := b.rc.Close()
	b.finish(false)
	return err
}

func (b *teeBody) finish(complete bool) {
	b.once.Do(func() {
		b.done(b.buf, complete)
		b.buf = nil
	})
}

// countCall counts requests per RPC name.
func (p *Proxy) countCall(name string) {
	if name == "" {
		p.stats.unknown.Add(1)
		return
	}
	if !isFollowed(name) {
		p.stats.otherCalls.Add(1)
	}
	p.stats.call(name)
}

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
