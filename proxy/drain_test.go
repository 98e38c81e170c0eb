package proxy

import (
	"context"
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
	o := Options{Upstream: s.URL(), Heal: true, Policy: fastPolicy(), Logf: t.Logf}
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
	o := Options{Upstream: s.URL(), Heal: true, Policy: fastPolicy(), Logf: t.Logf, ActAs: ActAsProxy,
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
