package thrift

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// After a transport error the poller retries with FreshConnRequested set;
// the client must then send the retry on a connection of its own, never on
// a pooled one that may be as stale as the one that failed.
func TestRetryAfterTransportErrorUsesNoPooledConnection(t *testing.T) {
	f := newFakeService()
	h := NewHandler(f)
	var (
		mu    sync.Mutex
		calls []string // per request: name + whether it asked to close the connection
		n     int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _ := PeekRequestCallName(r)
		mu.Lock()
		n++
		first := n == 2 // the first status call meets a stale connection
		tag := name
		if r.Close {
			tag += "+close"
		}
		calls = append(calls, tag)
		mu.Unlock()
		if first {
			_, _ = io.Copy(io.Discard, r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	if _, err := c.OpenSession(ctx, "wh1"); err != nil {
		t.Fatal(err)
	}
	pol := retry.NewPolicy(retry.PolicyOptions{Idle: []sources.IdleCloser{c}})
	err := pol.Do(ctx, retry.Call{Name: "GetOperationStatus", Safe: true}, func(ctx context.Context) error {
		_, err := c.Status(ctx, statusRef())
		return err
	})
	if !errors.Is(err, sources.ErrHandleGone) { // the fake has no such operation: the answer that counts is that one came
		t.Fatalf("status through the policy: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"OpenSession", "GetOperationStatus", "GetOperationStatus+close"}
	if len(calls) != len(want) {
		t.Fatalf("requests %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("requests %v, want %v (the retry must not use a keep-alive connection)", calls, want)
		}
	}
}
