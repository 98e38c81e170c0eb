package proxy

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// Over --max-conns-per-client a client's extra request waits for a slot
// and is then served (a driver that does not retry a 503 never sees
// one); past --queue-wait it is answered 503 with Retry-After. Another
// client is not held up.
func TestMaxConnsPerClientQueues(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: false, MaxConnsPerClient: 2, QueueWait: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	c := client(t, p.URL(), s.Token(), "busy/1.0")
	op := execute(ctx, t, c, wh, "SELECT sleep(600)")
	f, _ := sim.ParseFaults("latency=1s@GetOperationStatus")
	s.SetFaults(f)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = client(t, p.URL(), s.Token(), "busy/1.0").GetOperationStatus(ctx, op.Ref)
		}()
	}
	waitFor(t, "a request waiting for a slot", 10*time.Second, func() bool { return p.Stats().Waited >= 1 })
	// Another credential is another client: served while the first waits.
	if _, err := client(t, p.URL(), "other-token", "other/1.0").GetOperationStatus(ctx, op.Ref); isStatus(err, http.StatusServiceUnavailable) {
		t.Errorf("another client was limited: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d of the busy client: %v, want it served after waiting", i, err)
		}
	}
	if st := p.Stats(); st.Limited != 0 || st.Waited < 1 {
		t.Errorf("limited %d, waited %d: want 0 and at least 1", st.Limited, st.Waited)
	}
}

func isStatus(err error, code int) bool {
	var he *sources.HTTPError
	return errors.As(err, &he) && he.StatusCode == code
}

// A request still without a slot after --queue-wait is answered 503 with
// Retry-After.
func TestQueueWaitThenRefused(t *testing.T) {
	l := newLimiter(1, 0, 50*time.Millisecond, newIdentity([]byte("k")))
	r := httptest.NewRequest(http.MethodPost, "http://x/", nil)
	_, _, release := l.admit(r)
	why, waited, _ := l.admit(r)
	if why == "" || !waited {
		t.Fatalf("second request under --max-conns 1: why %q waited %v, want refused after waiting", why, waited)
	}
	release()
	if why, _, rel := l.admit(r); why != "" {
		t.Fatalf("refused with the slot free: %s", why)
	} else {
		rel()
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

// Bearer T and Basic token:T are one client; schemes are case-blind;
// another token or a real user:password pair is another.
func TestOneCredentialOneClient(t *testing.T) {
	id := newIdentity([]byte("install key"))
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	same := []string{"Bearer dapi123", "bearer  dapi123", basic("token:dapi123"), "BASIC " + base64.StdEncoding.EncodeToString([]byte("token:dapi123"))}
	for _, h := range same[1:] {
		if id.sum(h) != id.sum(same[0]) {
			t.Errorf("%q is not the same client as %q", h, same[0])
		}
	}
	for _, h := range []string{"Bearer dapi124", basic("alice:dapi123"), basic("token:dapi124"), ""} {
		if id.sum(h) == id.sum(same[0]) {
			t.Errorf("%q is the same client as %q", h, same[0])
		}
	}
	if newIdentity([]byte("other key")).sum(same[0]) == id.sum(same[0]) {
		t.Error("the identity does not depend on the key: a plain digest")
	}
	// The limiter counts them as one: Basic waits behind Bearer.
	l := newLimiter(0, 1, 30*time.Millisecond, id)
	r1 := httptest.NewRequest(http.MethodPost, "http://x/", nil)
	r1.Header.Set("Authorization", same[0])
	r2 := httptest.NewRequest(http.MethodPost, "http://x/", nil)
	r2.Header.Set("Authorization", same[2])
	_, _, release := l.admit(r1)
	defer release()
	if why, _, rel := l.admit(r2); why == "" {
		rel()
		t.Error("Basic token:T got a second slot beside Bearer T under --max-conns-per-client 1")
	}
}

// Idle sockets hold no slot: with --max-conns 2, connections that send
// nothing and keep-alive connections idle after a refused call do not
// lock a real client out.
func TestIdleSocketsHoldNoSlot(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{MaxConns: 2, QueueWait: 2 * time.Second})
	addr := p.URL()[len("http://"):]
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := 0; i < 41; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i := 0; i < 5; i++ {
		bad := client(t, p.URL(), "dapi-wrong-token", "probe/1.0")
		_, _ = bad.OpenSession(context.Background(), s.WarehouseIDs()[0]) // 401, keep-alive stays idle
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "job/1.0")
	op := execute(ctx, t, c, s.WarehouseIDs()[0], "SELECT 1")
	if _, err := c.GetOperationStatus(ctx, op.Ref); err != nil {
		t.Fatalf("a real client beside idle sockets under --max-conns 2: %v", err)
	}
	if n := p.Stats().Limited; n != 0 {
		t.Errorf("limited %d", n)
	}
}
