package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// Over --max-conns-per-client a client's extra request is answered 503
// with Retry-After; another client is still served.
func TestMaxConnsPerClient(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: false, MaxConnsPerClient: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	c := client(t, p.URL(), s.Token(), "busy/1.0")
	sess, err := c.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	// The Execute's slot is released when its handler returns, which can
	// come just after the client has read the answer: wait for it, or one
	// of the two polls below is refused instead of reaching the server.
	waitFor(t, "the client's earlier requests released", 10*time.Second, func() bool {
		p.limits.mu.Lock()
		defer p.limits.mu.Unlock()
		return len(p.limits.busy) == 0
	})
	f, _ := sim.ParseFaults("latency=1s@GetOperationStatus")
	s.SetFaults(f)
	base := s.Stats().Requests["GetOperationStatus"]
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = client(t, p.URL(), s.Token(), "busy/1.0").GetOperationStatus(ctx, op.Ref)
		}()
	}
	waitFor(t, "two polls in flight", 10*time.Second, func() bool { return s.Stats().Requests["GetOperationStatus"]-base >= 2 })
	_, err = client(t, p.URL(), s.Token(), "busy/1.0").GetOperationStatus(ctx, op.Ref)
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third request of the client: %v, want 503", err)
	}
	// Another Authorization value is another client.
	if _, err := client(t, p.URL(), "other-token", "other/1.0").GetOperationStatus(ctx, op.Ref); errors.As(err, &he) && he.StatusCode == http.StatusServiceUnavailable {
		t.Errorf("another client was limited: %v", err)
	}
	wg.Wait()
	if p.Stats().Limited != 1 {
		t.Errorf("limited %d, want 1", p.Stats().Limited)
	}
}

func TestLimiterRetryAfter(t *testing.T) {
	l := limiter{maxConns: 1, busy: map[authSum]int{}}
	l.connState(nil, http.StateNew)
	l.connState(nil, http.StateNew)
	r, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
	if why, _ := l.admit(r); why == "" {
		t.Fatal("two connections admitted under --max-conns 1")
	}
	l.connState(nil, http.StateClosed)
	if why, release := l.admit(r); why != "" {
		t.Fatalf("refused under the limit: %s", why)
	} else {
		release()
	}
	p, err := New(Options{Upstream: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	p.refuseLimited(w, "x")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("refusal: %d %v", w.Code, w.Header())
	}
}
