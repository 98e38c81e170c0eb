package thrift

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
)

const requestID = "8f0e4c1a-3b7d-4e2f-9a61-0c5d2b7e9f13"

// errorServer answers every call with status, headers and body.
func errorServer(t *testing.T, status int, header map[string]string, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func statusRef() sources.Ref {
	return sources.Ref{StatementID: "01ef0000-0000-4000-8000-000000000001", WarehouseID: "wh1"}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name                string
		status              int
		header              map[string]string
		body                string
		wantCode, wantReqID string
		wantMsg             string
		wantRetryAfter      time.Duration
		wantHasRetryAfter   bool
	}{
		{
			name:   "429 RESOURCE_EXHAUSTED body",
			status: 429,
			header: map[string]string{"Content-Type": "application/json"},
			body: `{"error_code":"RESOURCE_EXHAUSTED","message":"Endpoint vs-1 is at capacity",
				"details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"` + requestID + `","serving_data":""}]}`,
			wantCode: "RESOURCE_EXHAUSTED", wantReqID: requestID, wantMsg: "Endpoint vs-1 is at capacity",
		},
		{
			name:   "429 with Retry-After",
			status: 429,
			header: map[string]string{"Retry-After": "2", "Content-Type": "application/json"},
			body: `{"error_code":"REQUEST_LIMIT_EXCEEDED","message":"slow down",
				"details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"` + requestID + `"}]}`,
			wantCode: "REQUEST_LIMIT_EXCEEDED", wantReqID: requestID, wantMsg: "slow down",
			wantRetryAfter: 2 * time.Second, wantHasRetryAfter: true,
		},
		{
			name:      "503 without body",
			status:    503,
			header:    map[string]string{"X-Request-Id": requestID},
			wantReqID: requestID,
		},
		{
			name:    "502 HTML page from a proxy",
			status:  502,
			body:    "<html><body>Bad Gateway</body></html>",
			wantMsg: "HTML page: Bad Gateway",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := errorServer(t, tt.status, tt.header, tt.body)
			c := newTestClient(t, srv.URL)
			_, err := c.Status(context.Background(), statusRef())
			var he *sources.HTTPError
			if !errors.As(err, &he) {
				t.Fatalf("err %v (%T), want *sources.HTTPError", err, err)
			}
			if he.Call != "GetOperationStatus" || he.StatusCode != tt.status || he.ErrorCode != tt.wantCode ||
				he.RequestID != tt.wantReqID || he.Message != tt.wantMsg {
				t.Fatalf("got %+v", he)
			}
			if he.HasRetryAfter != tt.wantHasRetryAfter || he.RetryAfter != tt.wantRetryAfter {
				t.Fatalf("retry-after %v/%v, want %v/%v", he.RetryAfter, he.HasRetryAfter, tt.wantRetryAfter, tt.wantHasRetryAfter)
			}
			if strings.Contains(err.Error(), "HTTP Response code") {
				t.Fatalf("stock thrift error text: %v", err)
			}
			if tt.wantReqID != "" && !strings.Contains(err.Error(), tt.wantReqID) {
				t.Fatalf("error text %q lacks the request id", err)
			}
		})
	}
}

// resetServer reads each request, then aborts its connection with a TCP
// RST (SO_LINGER 0) instead of answering.
func resetServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		if err := conn.(*net.TCPConn).SetLinger(0); err != nil {
			t.Errorf("linger: %v", err)
		}
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTCPReset(t *testing.T) {
	srv := resetServer(t)
	c := newTestClient(t, srv.URL)
	_, err := c.Status(context.Background(), statusRef())
	if err == nil {
		t.Fatal("no error from a reset connection")
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v: errors.Is finds neither ECONNRESET nor EOF", err)
	}
	var te *TransportError
	if !errors.As(err, &te) || te.Call != "GetOperationStatus" || te.Warehouse != "wh1" {
		t.Fatalf("err %v (%T), want *TransportError naming the call", err, err)
	}
	var he *sources.HTTPError
	if errors.As(err, &he) {
		t.Fatal("a reset is not an HTTP answer")
	}
	if strings.Contains(err.Error(), testToken) {
		t.Fatal("error text leaks the token")
	}
}

// truncatingServer promises a longer body than it sends, then resets: the
// client must see a transport error (unexpected EOF or reset), not a
// decode error.
func TestTruncatedAnswerIsTransportError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/x-thrift\r\nContent-Length: 1000\r\n\r\n\x80\x01\x00\x02")
		_ = buf.Flush()
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL)
	_, err := c.Status(context.Background(), statusRef())
	var te *TransportError
	if !errors.As(err, &te) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v (%T), want TransportError wrapping io.ErrUnexpectedEOF", err, err)
	}
}

func TestRefusedIsTransportError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	c := newTestClient(t, "http://"+addr)
	_, err = c.Status(context.Background(), statusRef())
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err %v, want ECONNREFUSED reachable", err)
	}
}

func TestTimeoutNamesCall(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c := newTestClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Status(ctx, statusRef())
		done <- err
	}()
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled reachable", err)
	}
	if !strings.Contains(err.Error(), "GetOperationStatus") {
		t.Fatalf("error %q does not name the call", err)
	}
}

func TestClientTimeoutIsTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c := newTestClient(t, srv.URL, func(o *Options) { o.Timeout = 50 * time.Millisecond })
	_, err := c.Status(context.Background(), statusRef())
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err %v, want a net.Error with Timeout()", err)
	}
	if !strings.Contains(err.Error(), "GetOperationStatus") || !strings.Contains(err.Error(), "wh1") {
		t.Fatalf("error %q does not name the call and warehouse", err)
	}
	// The poller tells a client timeout from the caller's own deadline by
	// this text; stripping the url.Error must keep it.
	if !strings.Contains(err.Error(), "Client.Timeout") {
		t.Fatalf("error %q lost the Client.Timeout marker", err)
	}
}

// connCounter counts the TCP connections a server accepted.
type connCounter struct {
	mu sync.Mutex
	n  int
}

func (c *connCounter) state(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
}

func (c *connCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestCloseIdleConnectionsForcesFreshConnection(t *testing.T) {
	f := newFakeService()
	cc := &connCounter{}
	srv := httptest.NewUnstartedServer(NewHandler(f))
	srv.Config.ConnState = cc.state
	srv.Start()
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, func(o *Options) {
		o.HTTPPath = func(string) string { return "/" }
	})
	ctx := context.Background()
	if _, err := c.OpenSession(ctx, "wh1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenSession(ctx, "wh1"); err != nil {
		t.Fatal(err)
	}
	if n := cc.count(); n != 1 {
		t.Fatalf("%d connections for two calls, want 1 (keep-alive)", n)
	}
	c.CloseIdleConnections()
	if _, err := c.OpenSession(ctx, "wh1"); err != nil {
		t.Fatal(err)
	}
	if n := cc.count(); n != 2 {
		t.Fatalf("%d connections after CloseIdleConnections, want 2", n)
	}
}

// A custom Authenticate replaces the token; its failure names the call and
// nothing is sent.
func TestAuthenticateHook(t *testing.T) {
	srv, rec := newTestServer(t, newFakeService())
	c := newTestClient(t, srv.URL, func(o *Options) {
		o.Token = ""
		o.Authenticate = func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer from-sdk")
			return nil
		}
	})
	if _, err := c.OpenSession(context.Background(), "wh1"); err != nil {
		t.Fatal(err)
	}
	_, _, auths, _ := rec.snapshot()
	if len(auths) != 1 || auths[0] != "Bearer from-sdk" {
		t.Fatalf("auth %v", auths)
	}
	boom := errors.New("no credentials configured")
	c2 := newTestClient(t, srv.URL, func(o *Options) {
		o.Authenticate = func(*http.Request) error { return boom }
	})
	if _, err := c2.OpenSession(context.Background(), "wh1"); !errors.Is(err, boom) || !strings.Contains(err.Error(), "OpenSession") {
		t.Fatalf("err %v", err)
	}
	if calls, _, _, _ := rec.snapshot(); len(calls) != 1 {
		t.Fatalf("a call went out without credentials: %v", calls)
	}
}

// A 200 answer that is not Thrift (a login page behind a proxy) is a
// DecodeError, with a sanitized start of the body.
func TestNonThriftAnswer(t *testing.T) {
	srv := errorServer(t, 200, map[string]string{"Content-Type": "text/html"}, "<html>Sign in</html>")
	c := newTestClient(t, srv.URL)
	_, err := c.Status(context.Background(), statusRef())
	var de *DecodeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "Sign in") {
		t.Fatalf("err %v (%T)", err, err)
	}
}
