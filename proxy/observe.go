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
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
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
	p := t.p
	if req.Method != http.MethodPost || req.Body == nil || req.Body == http.NoBody {
		p.stats.untouched.Add(1)
		return p.up.RoundTrip(req)
	}
	prefix, err := io.ReadAll(io.LimitReader(req.Body, maxRequestBuffer+1))
	if err != nil {
		_ = req.Body.Close()
		return nil, fmt.Errorf("reading the client's request: %w", err)
	}
	now := p.clk.Now()
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
	p.countCall(rq.call)
	if rq.call != "" && !rq.decoded && isFollowed(rq.call) {
		p.stats.undecodable.Add(1)
	}
	rq.path, rq.ua, rq.auth = req.URL.Path, req.Header.Get("User-Agent"), req.Header.Get("Authorization")
	p.observeRequest(rq, now)

	call := retry.Call{Name: rq.call, OpID: rq.opID}
	switch {
	case !p.o.Heal || rq.call == "":
		return t.once(req, rq, prefix)
	case healable[rq.call]:
		call.Safe = true
	case rq.call == "ExecuteStatement":
		// Repeated only when it provably never reached the upstream (the
		// policy retries a failed dial even for unsafe calls; every other
		// failure may have executed it).
	default:
		// FetchResults (FETCH_NEXT moves a cursor), OpenSession, unknown.
		return t.once(req, rq, prefix)
	}
	return t.healed(req, rq, prefix, call)
}

func isFollowed(call string) bool {
	switch call {
	case "OpenSession", "CloseSession", "ExecuteStatement", "GetOperationStatus", "GetResultSetMetadata",
		"FetchResults", "CancelOperation", "CloseOperation":
		return true
	}
	return false
}

// once forwards with a single attempt.
func (t *observer) once(req *http.Request, rq request, body []byte) (*http.Response, error) {
	resp, err := t.attempt(req.Context(), req, rq.call, body, false)
	if err != nil && resp == nil {
		t.p.observeFailure(rq, err)
		return nil, err
	}
	return t.p.observeResponse(rq, resp, 1), nil
}

// healed runs the call under the retry policy, on a fresh connection after
// a transport error, within the client's own request (its context ends
// when the client gives up).
func (t *observer) healed(req *http.Request, rq request, body []byte, call retry.Call) (*http.Response, error) {
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
		return t.p.observeResponse(rq, last, attempts), nil
	}
	t.p.observeFailure(rq, err)
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
	if fresh {
		tr = p.fresh
		p.stats.freshConns.Add(1)
	}
	stop := context.AfterFunc(actx, cancel)
	resp, err := tr.RoundTrip(out)
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
func (p *Proxy) observeResponse(rq request, resp *http.Response, attempts int) *http.Response {
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body) // already bounded and buffered by attempt
		resp.Body = io.NopCloser(bytes.NewReader(b))
		p.observeFailure(rq, sources.ParseHTTPError(rq.call, resp.StatusCode, resp.Header, b))
		return resp
	}
	if rq.call == "" {
		return resp
	}
	limit := replyPrefix
	if rq.call == "FetchResults" {
		limit = fetchReplyPrefix
	}
	resp.Body = &teeBody{rc: resp.Body, limit: limit, done: func(prefix []byte, complete bool) {
		p.observeReply(rq, decodeReply(rq.call, prefix))
	}}
	return resp
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

// observeRequest records a client call: the client's activity on the
// operation or session it names, before the answer.
func (p *Proxy) observeRequest(rq request, now time.Time) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	switch {
	case rq.opID != "":
		o := p.st.touchOp(rq.opID, rq.secret, rq.path, rq.ua, rq.auth, now)
		if rq.call == "CloseOperation" {
			o.f.Close.ClientAttempts++
		}
	case rq.sessionID != "":
		p.st.touchSession(rq.sessionID, rq.path, rq.ua, rq.auth, now)
	}
}

// observeFailure records a call that got no usable answer upstream.
func (p *Proxy) observeFailure(rq request, err error) {
	if rq.call != "CloseOperation" || rq.opID == "" {
		return
	}
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	o := p.st.ops[rq.opID]
	if o == nil {
		return
	}
	if errors.Is(err, sources.ErrHandleGone) {
		p.markGone(o)
		return
	}
	p.clientCloseFailed(o, err)
}

// clientCloseFailed queues a close the client could not make: the client
// got the real error; the proxy retries until it succeeds or the handle is
// gone. Called with the store locked.
func (p *Proxy) clientCloseFailed(o *op, err error) {
	if !o.open() {
		return
	}
	now := p.clk.Now()
	info := retry.ErrorInfoOf(err)
	info.Message = clean(info.Message)
	o.f.Close.Outcome = sources.ProxyCloseFailed
	o.f.Close.ClientError = info
	o.f.Close.LastError = info
	if !o.queued {
		o.queued = true
		o.f.Close.Queued = true
		o.f.Close.NextTry = now
		p.stats.closesQueued.Add(1)
		o.event(now, "close-queued", "the client's CloseOperation failed upstream ("+info.Message+"); queued for the proxy to close", "")
		p.o.Logf("proxy: %s: client close failed upstream: %s; queued", o.f.StatementID, info.Message)
	}
}

func (p *Proxy) markGone(o *op) {
	if o.open() {
		o.setClosed(sources.ProxyGone, p.clk.Now())
	}
}

// observeReply records what an answer said.
func (p *Proxy) observeReply(rq request, r reply) {
	if !r.ok {
		if rq.call != "" && isFollowed(rq.call) {
			p.stats.undecodable.Add(1)
		}
		return
	}
	now := p.clk.Now()
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	serr := r.statusErr(rq.call)
	switch rq.call {
	case "OpenSession":
		if serr == nil && r.sessionID != "" {
			// The request named no session; the answer does.
			p.st.touchSession(r.sessionID, rq.path, rq.ua, rq.auth, now)
		}
	case "ExecuteStatement":
		if serr != nil || r.opID == "" {
			return
		}
		ss := p.st.sessions[rq.sessionID]
		path, ua := "", ""
		if ss != nil {
			path, ua = ss.path, ss.ua
		}
		o := p.st.ops[r.opID]
		if o == nil {
			o = p.st.addOp(r.opID, r.secret, path, ua, now)
		}
		o.sess = ss
		o.f.SessionID = rq.sessionID
		if ss != nil {
			o.f.SessionLastClientRPCAt = ss.lastRPC
		}
		if r.state != nil {
			o.f.State = *r.state
		}
		if r.directClosed {
			o.setClosed(sources.ProxyClosedByServer, now)
		}
	case "CloseSession":
		ss := p.st.sessions[rq.sessionID]
		if serr != nil || ss == nil {
			return
		}
		ss.closed, ss.auth = true, ""
		// HiveServer2 closes a session's operations with it.
		for _, o := range p.st.ops {
			if o.sess == ss && o.open() {
				o.setClosed(sources.ProxyClosedByServer, now)
			}
		}
	default:
		o := p.st.ops[rq.opID]
		if o == nil {
			return
		}
		if errors.Is(serr, sources.ErrHandleGone) {
			p.markGone(o)
			return
		}
		if r.state != nil && o.open() {
			o.f.State = *r.state
		}
		if rq.call == "CloseOperation" {
			if serr == nil {
				if o.open() {
					o.setClosed(sources.ProxyClosed, now)
				}
				return
			}
			p.clientCloseFailed(o, serr)
		}
		if rq.call == "CancelOperation" && serr == nil && o.f.State.Live() {
			o.f.State = model.StateCanceled
		}
	}
}

// recordHeal notes that the proxy repeated a client's call.
func (p *Proxy) recordHeal(rq request, attempts int, ok bool, first error) {
	if ok {
		p.stats.healed.Add(1)
	} else {
		p.stats.healFailed.Add(1)
	}
	if rq.opID == "" {
		return
	}
	now := p.clk.Now()
	cause := ""
	if first != nil {
		cause = retry.ErrorInfoOf(first).Message
	}
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
		o.event(now, "heal-failed", fmt.Sprintf("%s still failed after %d attempts (first: %s)", rq.call, attempts, clean(cause)), "client")
	}
}
