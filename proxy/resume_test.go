package proxy

import (
	"context"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// With --act-as client a close queued before a restart is made when its
// client's credentials are accepted again, not before, and not for
// another client; the file names the owner by an HMAC under the 0600
// owner key, never by the credential.
func TestQueuedCloseCompletesWhenClientReturns(t *testing.T) {
	s := startSim(t, "")
	state := filepath.Join(t.TempDir(), "state", "q.json")
	o := Options{Heal: true, Policy: fastPolicy(), StateFile: state, CloseDefer: time.Hour}
	p1 := startProxy(t, s.URL(), o)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	c := client(t, p1.URL(), s.Token(), "job/1.0")
	op := execute(ctx, t, c, wh, "SELECT 1")
	f, _ := sim.ParseFaults("unavailable=1@CloseOperation")
	s.SetFaults(f)
	_ = c.CloseOperation(ctx, op.Ref)
	if err := p1.Close(ctx); err != nil { // the drain's last try fails too
		t.Fatal(err)
	}
	s.SetFaults(sim.Faults{})
	b, err := os.ReadFile(state)
	if err != nil || !strings.Contains(string(b), `"owner":"`) || strings.Contains(string(b), s.Token()) {
		t.Fatalf("persisted queue: %v %s", err, b)
	}
	if fi, err := os.Stat(OwnerKeyFile(state)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("owner key: %v %v", fi, err)
	}

	o.CloseDefer = 0
	p2 := startProxy(t, s.URL(), o)
	// Another client's calls do not release it.
	other := client(t, p2.URL(), "dapi-other", "other/1.0")
	_, _ = other.OpenSession(ctx, wh)
	var doc adminapi.OperationsDoc
	adminGet(t, p2, adminapi.PathOperations, &doc)
	if len(doc.Operations) != 1 || !doc.Operations[0].Close.Queued {
		t.Fatalf("after the restart: %+v", doc.Operations)
	}
	if !simOpen(s, op.Ref.StatementID) {
		t.Fatal("closed before its client returned, with no credentials to act with")
	}
	// The client returns (a new session, as a restarted job would).
	back := client(t, p2.URL(), s.Token(), "job/1.0")
	if _, err := back.OpenSession(ctx, wh); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resumed close", 20*time.Second, func() bool { return !simOpen(s, op.Ref.StatementID) })
	waitFor(t, "the proxy to record it", 5*time.Second, func() bool {
		adminGet(t, p2, adminapi.PathOperations, &doc)
		return len(doc.Operations) == 1 && doc.Operations[0].Close.Outcome == sources.ProxyClosedByProxy
	})
}
