package proxy

import (
	"context"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// dbxtopWithProxy builds dbxtop's own stack (REST discovery, Thrift
// status with the REST fallback, the engine) on a simulator, with the
// proxy's facts merged in, as `dbxtop --proxy` wires it.
func dbxtopWithProxy(t *testing.T, s *sim.Server, p *Server, th model.Thresholds) *poller.Engine {
	t.Helper()
	ctx := context.Background()
	rest, err := databricks.New(ctx, databricks.Config{Host: s.URL(), Token: s.Token(), UserAgent: "dbxtop/test", Transport: &http.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rest.CloseIdleConnections)
	tc, err := thrift.NewClient(thrift.Options{Host: s.URL(), Token: s.Token(), UserAgent: "dbxtop/test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.CloseIdleConnections)
	admin, err := adminapi.NewAdminClient(p.AdminURL(), p.AdminToken(), "dbxtop/test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.CloseIdleConnections)
	m := adminapi.Merge(admin, rest, databricks.StatusWithFallback(tc, rest), rest)
	return poller.NewEngine(poller.Options{Discoverer: m, Status: m, Actions: m, Thresholds: th,
		Workspace: model.Workspace{Host: s.URL()}, Idle: []sources.IdleCloser{tc, rest, m}})
}

func find(s model.Snapshot, id string) (*model.OperationView, bool) {
	for _, o := range s.Operations {
		if o.StatementID == id {
			return o, true
		}
	}
	return nil, false
}

// TestDbxtopSeesWhatOnlyTheProxySaw: on a strict server with no owner
// activity volunteered, dbxtop raises INACTIVE for a silent client (the
// countdown from its last call through the proxy), CLOSE_FAILED naming
// the client for its failed close, and cancels through the proxy with
// the real handle (a rebuilt one would be refused).
func TestDbxtopSeesWhatOnlyTheProxySaw(t *testing.T) {
	s := startSimWith(t, sim.Options{Scenario: sim.ScenarioQuiet, Seed: 3})
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "etl-job/3.0")
	wh := s.WarehouseIDs()[0]
	sess, err := c.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	silent, err := c.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.Execute(ctx, sess, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := sim.ParseFaults("unavailable=1@CloseOperation")
	s.SetFaults(f)
	if err := c.CloseOperation(ctx, done.Ref); err == nil {
		t.Fatal("the client's close should have failed")
	}
	lastCall := time.Now()

	th := model.Thresholds{InactivityWarn: time.Second, ServerIdleTimeout: 90 * time.Second, LeakAfter: time.Minute}
	eng := dbxtopWithProxy(t, s, p, th)
	var snap model.Snapshot
	waitFor(t, "INACTIVE and CLOSE_FAILED from the proxy's facts", 20*time.Second, func() bool {
		_ = eng.RunOnce(ctx)
		snap = eng.Snapshot()
		a, ok1 := find(snap, silent.Ref.StatementID)
		b, ok2 := find(snap, done.Ref.StatementID)
		return ok1 && ok2 && a.HasFlag(model.FlagInactive) && b.HasFlag(model.FlagCloseFailed)
	})
	a, _ := find(snap, silent.Ref.StatementID)
	if a.ReapedIn == nil {
		t.Fatal("INACTIVE without a reaper countdown")
	}
	want := 90*time.Second - time.Since(lastCall)
	if d := *a.ReapedIn - want; d > 2*time.Second || d < -2*time.Second {
		t.Errorf("countdown %s, want %s ±2s (from the client's last call)", *a.ReapedIn, want)
	}
	b, _ := find(snap, done.Ref.StatementID)
	for _, fl := range b.Flags {
		if fl.Kind == model.FlagCloseFailed && !strings.Contains(fl.Detail, "client's close failed") {
			t.Errorf("CLOSE_FAILED does not name the client: %q", fl.Detail)
		}
	}
	if b.Proxy == nil || b.Proxy.ClientCloseAttempts != 1 {
		t.Errorf("proxy account %+v", b.Proxy)
	}

	// dbxtop cancels the silent one: through the proxy, with the real handle.
	s.SetFaults(sim.Faults{})
	if err := eng.Cancel(ctx, silent.Ref.StatementID); err != nil {
		t.Fatalf("cancel through the proxy: %v", err)
	}
	for _, o := range s.Truth().Operations {
		if o.StatementID == silent.Ref.StatementID && o.State != "CANCELED" {
			t.Errorf("truth after dbxtop's cancel: %+v", o)
		}
	}
	// The proxy's queue closes the client's failed close once the server accepts.
	waitFor(t, "the proxy's queue to close the failed close", 20*time.Second, func() bool {
		for _, o := range s.Truth().Operations {
			if o.StatementID == done.Ref.StatementID {
				return !o.Open
			}
		}
		return false
	})
	_ = sources.ProxyClosedByProxy
}
