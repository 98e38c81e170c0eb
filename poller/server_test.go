package poller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// A small JSON operations service on loopback with real fault injection,
// and a source that talks to it over real HTTP. It stands in for the
// Thrift/REST sources so the poller is tested against real net/http errors.

const testToken = "dapi-secret-token-0123456789"

// fault is what the server does with one request.
type fault struct {
	reset  bool // TCP reset: SetLinger(0) then Close, no answer
	drop   bool // close without answer (stale keep-alive as the client sees it)
	status int  // answer with this status and body
	body   string
	header map[string]string
	hang   bool          // never answer (until the client gives up)
	gate   chan struct{} // wait for it to close, then answer normally
}

// request is what the server saw.
type request struct {
	Path  string
	ID    string // operation id from the body
	Conn  int    // server-side connection number
	NthOn int    // 1 for the first request on that connection
	Fault string
}

type opServer struct {
	t  *testing.T
	ts *httptest.Server

	mu      sync.Mutex
	ops     map[string]*srvOp
	conns   int
	connIDs map[net.Conn]int
	perConn map[int]int
	reqs    []request
	// faultFor decides each request's fault; nil → none.
	faultFor func(r request) fault
	hangs    chan struct{}
}

type srvOp struct {
	ID        string     `json:"id"`
	State     string     `json:"state"`
	Open      bool       `json:"open"`
	StartedAt time.Time  `json:"started_at"`
	Activity  *time.Time `json:"activity,omitempty"`
	Error     string     `json:"error,omitempty"`
	Closes    int        `json:"-"`
	Cancels   int        `json:"-"`
}

type ctxConnKey struct{}

func newOpServer(t *testing.T) *opServer {
	s := &opServer{t: t, ops: map[string]*srvOp{}, connIDs: map[net.Conn]int{}, perConn: map[int]int{}, hangs: make(chan struct{})}
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, ctxConnKey{}, c)
	}
	s.ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.connIDs[c] = s.conns
			s.mu.Unlock()
		}
	}
	s.ts.Start()
	t.Cleanup(func() {
		close(s.hangs)
		s.ts.Close()
	})
	return s
}

func (s *opServer) add(op srvOp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := op
	s.ops[op.ID] = &o
}

func (s *opServer) set(id string, fn func(o *srvOp)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.ops[id])
}

func (s *opServer) setFault(fn func(r request) fault) {
	s.mu.Lock()
	s.faultFor = fn
	s.mu.Unlock()
}

func (s *opServer) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

func (s *opServer) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// count returns requests to path (and how many of them got a fault).
func (s *opServer) count(path string) (all, faulted int) {
	for _, r := range s.requests() {
		if r.Path == path {
			all++
			if r.Fault != "" {
				faulted++
			}
		}
	}
	return
}

func (s *opServer) serve(w http.ResponseWriter, r *http.Request) {
	c := r.Context().Value(ctxConnKey{}).(net.Conn)
	var in struct{ ID string }
	if r.Method == http.MethodPost {
		_ = json.NewDecoder(r.Body).Decode(&in)
	}
	s.mu.Lock()
	id := s.connIDs[c]
	s.perConn[id]++
	req := request{Path: r.URL.Path, ID: in.ID, Conn: id, NthOn: s.perConn[id]}
	var f fault
	if s.faultFor != nil {
		f = s.faultFor(req)
	}
	switch {
	case f.reset:
		req.Fault = "reset"
	case f.drop:
		req.Fault = "drop"
	case f.hang:
		req.Fault = "hang"
	case f.status != 0:
		req.Fault = strconv.Itoa(f.status)
	}
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	// Faults come first, as from a load balancer in front of the service.
	switch {
	case f.reset || f.drop:
		hj := w.(http.Hijacker)
		conn, _, err := hj.Hijack()
		if err != nil {
			s.t.Errorf("hijack: %v", err)
			return
		}
		if f.reset {
			_ = conn.(*net.TCPConn).SetLinger(0)
		}
		_ = conn.Close()
		return
	case f.hang:
		select {
		case <-r.Context().Done():
		case <-s.hangs:
		}
		return
	case f.status != 0:
		for k, v := range f.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		_, _ = io.WriteString(w, f.body)
		return
	}
	if f.gate != nil {
		<-f.gate
	}
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		writeErr(w, 401, "UNAUTHENTICATED", "missing or wrong token", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.ops[in.ID]
	switch r.URL.Path {
	case "/ops":
		list := make([]srvOp, 0, len(s.ops))
		for _, o := range s.ops {
			list = append(list, *o)
		}
		_ = json.NewEncoder(w).Encode(list)
	case "/status", "/close", "/cancel":
		if op == nil || !op.Open {
			writeErr(w, 404, "RESOURCE_DOES_NOT_EXIST", "no operation "+in.ID, nil)
			return
		}
		switch r.URL.Path {
		case "/close":
			op.Open = false
			op.Closes++
		case "/cancel":
			op.Cancels++
			if !model.State(op.State).Terminal() {
				op.State = string(model.StateCanceled)
			}
		}
		_ = json.NewEncoder(w).Encode(op)
	case "/upsert":
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "SUCCESS"})
	default:
		http.NotFound(w, r)
	}
}

// errBody is a Databricks error body with a RequestInfo detail.
func errBody(code, msg, requestID string) string {
	b, _ := json.Marshal(map[string]any{
		"error_code": code, "message": msg,
		"details": []map[string]any{{"@type": "type.googleapis.com/google.rpc.RequestInfo", "request_id": requestID}},
	})
	return string(b)
}

func writeErr(w http.ResponseWriter, status int, code, msg string, hdr map[string]string) {
	for k, v := range hdr {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, errBody(code, msg, "6f1c2a4e-0000-4000-8000-00000000abcd"))
}

// httpSource is the test's source: one POST per call over a real
// transport (POST so that net/http does not silently replay a request on
// a stale connection, exactly like the Thrift client).
type httpSource struct {
	base  string
	tr    *http.Transport
	cl    *http.Client
	fresh *http.Client // no keep-alive: always a new connection
	// ignoreFresh makes the source ignore FreshConnRequested, so that a
	// test sees what dropping idle connections does on its own.
	ignoreFresh bool
}

func newHTTPSource(s *opServer) *httpSource {
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	return &httpSource{base: s.ts.URL, tr: tr, cl: &http.Client{Transport: tr},
		fresh: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
}

func (h *httpSource) CloseIdleConnections() {
	h.tr.CloseIdleConnections()
	h.fresh.CloseIdleConnections()
}

func (h *httpSource) post(ctx context.Context, call, path, id string, out any) error {
	body, _ := json.Marshal(map[string]string{"id": id})
	method := http.MethodPost
	if path == "/ops" {
		method = http.MethodGet
		body = nil
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	cl := h.cl
	if sources.FreshConnRequested(ctx) && !h.ignoreFresh {
		cl = h.fresh
	}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		he := parseHTTPError(call, resp.StatusCode, resp.Header, data, time.Now())
		if he.ErrorCode == "RESOURCE_DOES_NOT_EXIST" {
			return fmt.Errorf("%s %s: %w: %w", call, id, sources.ErrHandleGone, he)
		}
		return he
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func (h *httpSource) Discover(ctx context.Context, retry sources.Retry) ([]sources.Discovered, error) {
	var list []srvOp
	if err := retry(ctx, "ListQueries", func(ctx context.Context) error {
		list = nil
		return h.post(ctx, "ListQueries", "/ops", "", &list)
	}); err != nil {
		return nil, err
	}
	out := make([]sources.Discovered, 0, len(list))
	for _, o := range list {
		out = append(out, sources.Discovered{
			Op:  model.Operation{StatementID: o.ID, WarehouseID: "wh1", State: model.State(o.State), StartedAt: o.StartedAt},
			Ref: sources.Ref{StatementID: o.ID, WarehouseID: "wh1"},
		})
	}
	return out, nil
}

func (h *httpSource) Status(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	var o srvOp
	if err := h.post(ctx, CallStatus, "/status", ref.StatementID, &o); err != nil {
		return sources.Status{}, err
	}
	open := o.Open
	return sources.Status{State: model.State(o.State), StartedAt: o.StartedAt, ErrorMessage: o.Error,
		ClientLastActivity: o.Activity, Open: &open}, nil
}

func (h *httpSource) Close(ctx context.Context, ref sources.Ref) error {
	return h.post(ctx, CallClose, "/close", ref.StatementID, nil)
}

func (h *httpSource) Cancel(ctx context.Context, ref sources.Ref) error {
	return h.post(ctx, CallCancel, "/cancel", ref.StatementID, nil)
}

func (h *httpSource) upsert(ctx context.Context) error {
	return h.post(ctx, CallProbe, "/upsert", "", nil)
}

// parseHTTPError is the test's own parser of a Databricks error answer:
// error_code, message, RequestInfo.request_id, RetryInfo.retry_delay and
// Retry-After (seconds or HTTP-date).
func parseHTTPError(call string, status int, h http.Header, body []byte, now time.Time) *sources.HTTPError {
	he := &sources.HTTPError{Call: call, StatusCode: status, RequestID: h.Get("x-request-id")}
	if len(body) > 512 {
		he.Body = string(body[:512])
	} else {
		he.Body = string(body)
	}
	var eb struct {
		ErrorCode string `json:"error_code"`
		Message   string `json:"message"`
		Details   []struct {
			Type       string `json:"@type"`
			RequestID  string `json:"request_id"`
			RetryDelay string `json:"retry_delay"`
		} `json:"details"`
	}
	if json.Unmarshal(body, &eb) == nil {
		he.ErrorCode, he.Message = eb.ErrorCode, eb.Message
		for _, d := range eb.Details {
			switch {
			case strings.HasSuffix(d.Type, "google.rpc.RequestInfo") && d.RequestID != "":
				he.RequestID = d.RequestID
			case strings.HasSuffix(d.Type, "google.rpc.RetryInfo"):
				if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
					he.RetryAfter, he.HasRetryAfter = v, true
				}
			}
		}
	}
	if ra := strings.TrimSpace(h.Get("Retry-After")); ra != "" {
		if secs, err := strconv.Atoi(ra); err == nil && secs >= 0 {
			// Capped like the product parser: a huge value must not
			// overflow into a negative wait.
			he.RetryAfter, he.HasRetryAfter = time.Duration(min(secs, 86400))*time.Second, true
		} else if t, err := http.ParseTime(ra); err == nil {
			d := t.Sub(now)
			if d < 0 {
				d = 0
			}
			he.RetryAfter, he.HasRetryAfter = d, true
		}
	}
	return he
}
