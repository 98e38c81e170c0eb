package proxy

import (
	"context"
	"errors"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// runStatement opens a session, runs sql, pages every row and closes
// operation and session, as a well-behaved client does.
func runStatement(ctx context.Context, c *thrift.Client, wh, sql string) (rows int, opID string, err error) {
	s, err := c.OpenSession(ctx, wh)
	if err != nil {
		return 0, "", err
	}
	defer c.CloseSession(ctx, s)
	op, err := c.Execute(ctx, s, sql, false)
	if err != nil {
		return 0, "", err
	}
	for {
		st, err := c.GetOperationStatus(ctx, op.Ref)
		if err != nil {
			return 0, op.Ref.StatementID, err
		}
		if st.State.Terminal() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		p, err := c.FetchResults(ctx, op.Ref, 1000)
		if err != nil {
			return rows, op.Ref.StatementID, err
		}
		rows += len(p.Rows)
		if !p.HasMoreRows {
			break
		}
	}
	return rows, op.Ref.StatementID, c.CloseOperation(ctx, op.Ref)
}

func TestTransparentSameRowsSameUpstreamCalls(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: true})
	wh := s.WarehouseIDs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	direct := client(t, s.URL(), s.Token(), "testapp/2.1 (direct)")
	before := s.Stats().Requests
	n1, _, err := runStatement(ctx, direct, wh, "SELECT id FROM range(2500)")
	if err != nil || n1 != 2500 {
		t.Fatalf("direct: %d rows, %v", n1, err)
	}
	mid := s.Stats().Requests
	via := client(t, p.URL(), s.Token(), "testapp/2.1 (proxied)")
	n2, id, err := runStatement(ctx, via, wh, "SELECT id FROM range(2500)")
	if err != nil || n2 != 2500 {
		t.Fatalf("through the proxy: %d rows, %v", n2, err)
	}
	after := s.Stats().Requests
	for _, call := range []string{"OpenSession", "ExecuteStatement", "FetchResults", "CloseOperation", "CloseSession"} {
		d, v := mid[call]-before[call], after[call]-mid[call]
		if d != v {
			t.Errorf("%s: %d upstream calls direct, %d through the proxy", call, d, v)
		}
	}

	var doc adminapi.OperationsDoc
	if code := adminGet(t, p, adminapi.PathOperations, &doc); code != 200 {
		t.Fatalf("admin operations: HTTP %d", code)
	}
	if len(doc.Operations) != 1 {
		t.Fatalf("proxy saw %d operations, want 1: %+v", len(doc.Operations), doc.Operations)
	}
	f := doc.Operations[0]
	if f.StatementID != id || f.WarehouseID != wh || f.ClientApplication != "testapp" || f.SessionID == "" {
		t.Errorf("facts %+v", f)
	}
	if f.Close.Outcome != sources.ProxyClosed || f.Close.ClientAttempts != 1 || f.State != model.StateClosed && f.State != model.StateFinished {
		t.Errorf("close account %+v state %s", f.Close, f.State)
	}
	if f.LastClientRPCAt.IsZero() || f.SessionLastClientRPCAt.Before(f.LastClientRPCAt) {
		t.Errorf("activity: op %v session %v", f.LastClientRPCAt, f.SessionLastClientRPCAt)
	}
	// The client's own User-Agent reached the server: its calls are the
	// owner's, so the simulator saw a client, not an observer.
	for _, o := range s.Truth().Operations {
		if o.StatementID == id && o.ClientKind != sim.KindExternal {
			t.Errorf("simulator saw kind %q", o.ClientKind)
		}
	}
}

func TestHealStatusOnFreshConnection(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy()})
	wh := s.WarehouseIDs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "testapp/1.0")
	sess, err := c.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT 7", false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := sim.ParseFaults("reset=0.5@GetOperationStatus")
	if err != nil {
		t.Fatal(err)
	}
	s.SetFaults(f)
	for i := 0; i < 20; i++ {
		if _, err := c.GetOperationStatus(ctx, op.Ref); err != nil {
			t.Fatalf("status %d through the healing proxy: %v", i, err)
		}
	}
	s.SetFaults(sim.Faults{})
	if s.Stats().Faults["reset"] == 0 {
		t.Fatal("no reset was injected: the test proves nothing")
	}
	st := p.Stats()
	if st.Healed == 0 || st.FreshConnections == 0 {
		t.Errorf("stats %+v: want heals on fresh connections", st)
	}
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	if len(doc.Operations) != 1 || doc.Operations[0].Heals == 0 {
		t.Errorf("facts %+v: want heals counted", doc.Operations)
	}
}

func TestHealOffPassesTheFailure(t *testing.T) {
	s := startSim(t, "reset=1@GetOperationStatus")
	p := startProxy(t, s.URL(), Options{Heal: false})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "testapp/1.0")
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Stats().Requests["GetOperationStatus"]
	_, err = c.GetOperationStatus(ctx, op.Ref)
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 502 || !strings.Contains(he.Message, "dbxtop-proxy") {
		t.Fatalf("want the proxy's 502 naming itself, got %v", err)
	}
	if n := s.Stats().Requests["GetOperationStatus"] - before; n != 1 {
		t.Errorf("heal off: %d upstream attempts, want 1", n)
	}
}

func TestClientCloseFailureQueuedUntilClosed(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "testapp/1.0")
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
	err = c.CloseOperation(ctx, op.Ref)
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 503 {
		t.Fatalf("client close: want the upstream's real 503, got %v", err)
	}
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	if got := doc.Operations[0].Close; got.Outcome != sources.ProxyCloseFailed || !got.Queued || got.ClientError == nil || got.ClientError.HTTPStatus != 503 {
		t.Fatalf("close account after the failure: %+v", got)
	}
	s.SetFaults(sim.Faults{})
	waitFor(t, "the proxy's queue to close it", 20*time.Second, func() bool {
		adminGet(t, p, adminapi.PathOperations, &doc)
		return doc.Operations[0].Close.Outcome == sources.ProxyClosedByProxy
	})
	for _, o := range s.Truth().Operations {
		if o.StatementID == op.Ref.StatementID && o.Open {
			t.Errorf("simulator still holds %s open", o.StatementID)
		}
	}
	if p.Stats().ClosedByProxy != 1 {
		t.Errorf("stats %+v", p.Stats())
	}
}

func TestCloseAbandonedCancelsThenCloses(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy(), CloseAbandoned: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "testapp/1.0")
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	var doc adminapi.OperationsDoc
	waitFor(t, "the abandoned operation to be closed", 20*time.Second, func() bool {
		adminGet(t, p, adminapi.PathOperations, &doc)
		return len(doc.Operations) == 1 && doc.Operations[0].Close.Outcome == sources.ProxyClosedByProxy
	})
	f := doc.Operations[0]
	var kinds []string
	for _, a := range f.Actions {
		kinds = append(kinds, a.Kind+"/"+a.Credentials)
	}
	if strings.Join(kinds, ",") != "abandoned/client,canceled/client,closed/client" {
		t.Errorf("actions %v", kinds)
	}
	for _, o := range s.Truth().Operations {
		if o.StatementID == op.Ref.StatementID && (o.Open || o.State != "CANCELED" && o.State != "CLOSED" || !strings.Contains(o.ErrorMessage, "canceled")) {
			t.Errorf("truth: %+v", o)
		}
	}
	// The proxy's own calls carry dbxtop-proxy/: the simulator counted
	// them as an observer's, so they did not refresh the owner's activity.
	_ = sess
}

func TestCleanIsOneSafeLine(t *testing.T) {
	got := clean("app\x1b[31m/1\n\u202eevil Bearer dapi0123456789abcdef0123456789abcdef " + strings.Repeat("x", 3000))
	if strings.ContainsAny(got, "\x1b\n\u202e") || strings.Contains(got, "dapi0123") || len(got) > adminapi.MaxText {
		t.Errorf("clean: %q", got)
	}
}
