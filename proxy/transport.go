package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/internal/preauth"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// The transport: ReverseProxy's round trip, healing, the answer's tee
// and the errors of the upstream leg. What an answer means for the
// operations is the ledger's (ledger.go).

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
		preauth.MarkAuthenticated(req.Context())
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
	rq.path, rq.ua = req.URL.Path, req.Header.Get("User-Agent")
	rq = p.st.id.withAuth(rq, req.Header.Get("Authorization"))
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
	if !p.st.answerForProxy(rq) {
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
