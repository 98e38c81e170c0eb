package thrift

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A keep-alive connection that the server closes (FIN) after reading the
// next request, without answering: what a load balancer's idle close
// looks like when it races the client's reuse. The client must report a
// transport error that reaches io.EOF, not a success or an HTTP error.
func TestStaleKeepAliveIsEOF(t *testing.T) {
	f := newFakeService()
	h := NewHandler(f)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			h.ServeHTTP(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	if _, err := c.OpenSession(ctx, "wh1"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Status(ctx, statusRef())
	t.Logf("stale reuse error: %v", err)
	var te *TransportError
	if !errors.As(err, &te) {
		t.Fatalf("err %v (%T), want *TransportError", err, err)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("err %v does not reach io.EOF", err)
	}
}

// net/http reports the other side of that race (the server's FIN seen
// before the request went out) as an unexported error that does not wrap
// io.EOF; the client maps it so errors.Is(err, io.EOF) holds either way.
func TestServerClosedIdleMapsToEOF(t *testing.T) {
	orig := errors.New(serverClosedIdleText)
	err := stripURL(orig)
	if !errors.Is(err, io.EOF) || !errors.Is(err, orig) || err.Error() != serverClosedIdleText {
		t.Fatalf("mapped %v: Is EOF %v, Is orig %v", err, errors.Is(err, io.EOF), errors.Is(err, orig))
	}
	if other := errors.New("x"); stripURL(other) != other {
		t.Fatal("other errors must pass through unchanged")
	}
}
