package proxy

import (
	"context"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// A drain (SIGTERM) with 20 clients polling: every request in flight
// when it starts is answered before the proxy stops.
func TestDrainAnswersInFlightRequests(t *testing.T) {
	s := startSim(t, "")
	o := Options{Upstream: s.URL(), Heal: true, Policy: fastPolicy(), Logger: testLogger(t)}
	p, err := Start(context.Background(), o, ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const clients = 20
	c := client(t, p.URL(), s.Token(), "poller/1.0")
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	var refs []sources.Ref
	for i := 0; i < clients; i++ {
		op, err := c.Execute(ctx, sess, "SELECT sleep(600)", false)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, op.Ref)
	}
	f, _ := sim.ParseFaults("latency=400ms@GetOperationStatus")
	s.SetFaults(f)
	base := s.Stats().Requests["GetOperationStatus"]
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = client(t, p.URL(), s.Token(), "poller/1.0").GetOperationStatus(ctx, refs[i])
		}(i)
	}
	waitFor(t, "every poll to reach the server", 20*time.Second, func() bool {
		return s.Stats().Requests["GetOperationStatus"]-base >= clients
	})
	dctx, dcancel := context.WithTimeout(context.Background(), DefaultDrainTimeout)
	defer dcancel()
	if err := p.Close(dctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("poll %d in flight at the drain: %v", i, err)
		}
	}
	if _, err := http.Get(p.URL()); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("after the drain a new connection got %v, want refused", err)
	}
}

// The close queue survives a restart: persisted 0600 and atomically
// (handles and secrets, never a credential), and with --act-as proxy the
// next start closes what it held.
func TestCloseQueuePersistedAndResumed(t *testing.T) {
	s := startSim(t, "")
	state := filepath.Join(t.TempDir(), "state", "q.json")
	auth := func(r *http.Request) error { r.Header.Set("Authorization", "Bearer "+s.Token()); return nil }
	o := Options{Upstream: s.URL(), Heal: true, Policy: fastPolicy(), Logger: testLogger(t), ActAs: ActAsProxy,
		Authenticate: auth, StateFile: state, CloseDefer: time.Hour}
	p1, err := Start(context.Background(), o, ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(t, p1.URL(), s.Token(), "job/1.0")
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := sim.ParseFaults("unavailable=1@CloseOperation")
	s.SetFaults(f)
	_ = c.CloseOperation(ctx, op.Ref)
	// The drain's last run of the queue fails too: the close is persisted.
	if err := p1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(state)
	if err != nil {
		t.Fatalf("no persisted queue: %v", err)
	}
	b, _ := os.ReadFile(state)
	if fi.Mode().Perm() != 0o600 || !strings.Contains(string(b), op.Ref.StatementID) || strings.Contains(string(b), s.Token()) {
		t.Fatalf("persisted queue %v %s", fi.Mode(), b)
	}
	if !simOpen(s, op.Ref.StatementID) {
		t.Fatal("premise: the operation should still be open on the server")
	}
	s.SetFaults(sim.Faults{})
	o.CloseDefer = 0
	p2 := startProxy(t, s.URL(), o)
	waitFor(t, "the resumed close", 20*time.Second, func() bool { return !simOpen(s, op.Ref.StatementID) })
	waitFor(t, "the proxy to record it", 5*time.Second, func() bool { return p2.Stats().ClosedByProxy == 1 })
	_ = p2
}

func TestStateFilePath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"STATE_DIRECTORY": "/var/lib/dbxtop-proxy:/other"}, "/var/lib/dbxtop-proxy/proxy-close-queue-127.0.0.1_8444.json"},
		{map[string]string{"XDG_STATE_HOME": "/x"}, "/x/dbxtop/proxy-close-queue-127.0.0.1_8444.json"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/dbxtop/proxy-close-queue-127.0.0.1_8444.json"},
	} {
		got, err := StateFile(env(tc.env), "127.0.0.1:8444")
		if err != nil || got != tc.want {
			t.Errorf("%v: %q %v, want %q", tc.env, got, err, tc.want)
		}
	}
}

// A drain keeps queries alive: readiness fails and a new session is
// refused with 503 and Retry-After, but the held session's statement is
// polled, fetched and closed through the proxy, and the drain ends as
// soon as nothing is open, before its timeout.
func TestDrainKeepsQueriesAlive(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	if code := adminGet(t, p, adminapi.PathReady, nil); code != http.StatusOK {
		t.Fatalf("ready before the drain: %d", code)
	}
	c := client(t, p.URL(), s.Token(), "job/1.0")
	op := execute(ctx, t, c, wh, "SELECT sleep(2)")
	done := make(chan error, 1)
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer dcancel()
	go func() { done <- p.Drain(dctx) }()
	waitFor(t, "the drain to begin", 10*time.Second, func() bool { return p.Stats().Draining })
	if code := adminGet(t, p, adminapi.PathReady, nil); code != http.StatusServiceUnavailable {
		t.Errorf("ready while draining: %d, want 503", code)
	}
	if _, err := client(t, p.URL(), s.Token(), "newcomer/1.0").OpenSession(ctx, wh); !isStatus(err, http.StatusServiceUnavailable) {
		t.Errorf("a new session while draining: %v, want 503", err)
	}
	for {
		st, err := c.GetOperationStatus(ctx, op.Ref)
		if err != nil {
			t.Fatalf("a poll of the held statement while draining: %v", err)
		}
		if !st.State.Live() {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the drain ended (%v) with the statement still running", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := c.FetchResults(ctx, op.Ref, 10); err != nil {
		t.Fatalf("fetch while draining: %v", err)
	}
	if err := c.CloseOperation(ctx, op.Ref); err != nil {
		t.Fatalf("close while draining: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("drain: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the drain did not end once nothing was open")
	}
	if simOpen(s, op.Ref.StatementID) {
		t.Error("the statement is still open on the server")
	}
	if st := p.Stats(); st.DrainLeftOpen != 0 || st.DrainRefused != 1 {
		t.Errorf("left open %d, refused sessions %d: want 0 and 1", st.DrainLeftOpen, st.DrainRefused)
	}
}

// A drain that times out leaves open operations alone (no close, no
// cancel), says so in one WARN line and counts them.
func TestDrainTimeoutLeavesOperationsAlone(t *testing.T) {
	s := startSim(t, "")
	var logs syncBuffer
	p := startProxy(t, s.URL(), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "job/1.0")
	op := execute(ctx, t, c, s.WarehouseIDs()[0], "SELECT sleep(600)")
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	if err := p.Drain(dctx); err != nil {
		t.Fatal(err)
	}
	if !simOpen(s, op.Ref.StatementID) {
		t.Error("the drain closed a running statement")
	}
	if n := p.Stats().DrainLeftOpen; n != 1 {
		t.Errorf("drain_left_open %d, want 1", n)
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"drain timeout with operations still open") {
		t.Errorf("no WARN line:\n%s", logs.String())
	}
}
