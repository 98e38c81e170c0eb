package proxy

import (
	"context"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// An operation started before the proxy (directly) is learned from a
// successful call on it through the proxy, marked so, and the proxy acts
// on it with the credentials the server accepted on that call.
func TestLearnedAfterStartFromASuccessfulCall(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy()})
	wh := s.WarehouseIDs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	direct := client(t, s.URL(), s.Token(), "job/1.0")
	sess, err := direct.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	op, err := direct.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Stats().Operations; n != 0 {
		t.Fatalf("%d operations before any call through the proxy", n)
	}
	via := client(t, p.URL(), s.Token(), "job/1.0")
	if _, err := via.GetOperationStatus(ctx, op.Ref); err != nil {
		t.Fatal(err)
	}
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	if len(doc.Operations) != 1 || !doc.Operations[0].LearnedAfterStart || doc.Operations[0].StatementID != op.Ref.StatementID {
		t.Fatalf("facts %+v: want the operation learned after start", doc.Operations)
	}
	f, _ := sim.ParseFaults("unavailable=1@CloseOperation")
	s.SetFaults(f)
	_ = via.CloseOperation(ctx, op.Ref)
	s.SetFaults(sim.Faults{})
	waitFor(t, "the queue to close the learned operation", 20*time.Second, func() bool {
		adminGet(t, p, adminapi.PathOperations, &doc)
		return doc.Operations[0].Close.Outcome == sources.ProxyClosedByProxy
	})
	if a := doc.Operations[0].Actions; len(a) == 0 || a[len(a)-1].Credentials != "client" {
		t.Errorf("actions %+v: want the close made with the client's credentials", a)
	}
	if simOpen(s, op.Ref.StatementID) {
		t.Error("the simulator still holds it open")
	}
}

// --act-as proxy: the proxy's own calls carry its workspace credentials,
// never a client's; --act-as client (default) never falls back to them.
func TestActAs(t *testing.T) {
	for _, actAs := range []string{ActAsProxy, ActAsClient} {
		t.Run(actAs, func(t *testing.T) {
			s := startSim(t, "")
			var proxyCalls atomic.Int64
			o := Options{Heal: true, Policy: fastPolicy(), CloseAbandoned: 300 * time.Millisecond, ActAs: actAs,
				Authenticate: func(r *http.Request) error {
					proxyCalls.Add(1)
					r.Header.Set("Authorization", "Bearer "+s.Token())
					return nil
				}}
			p := startProxy(t, s.URL(), o)
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
			var creds []string
			for _, a := range doc.Operations[0].Actions {
				creds = append(creds, a.Credentials)
			}
			if strings.Join(creds, ",") != strings.Repeat(actAs+",", 2)+actAs {
				t.Errorf("credentials of the actions: %v, want %s", creds, actAs)
			}
			if actAs == ActAsClient && proxyCalls.Load() != 0 {
				t.Errorf("--act-as client used the proxy's credentials %d times", proxyCalls.Load())
			}
			if actAs == ActAsProxy && proxyCalls.Load() == 0 {
				t.Error("--act-as proxy never used the proxy's credentials")
			}
			_ = op
		})
	}
}

// A client authenticating with HTTP Basic (user "token", the personal
// access token as password) is proxied and acted for like a bearer one.
func TestBasicAuthPassthrough(t *testing.T) {
	s := startSim(t, "")
	// The window is longer than a loaded machine's gap between two status
	// polls of runStatement's client: only the statement left alone below
	// is abandoned.
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy(), CloseAbandoned: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := thrift.NewClient(thrift.Options{Host: p.URL(), UserAgent: "jdbc/1.0", Timeout: 20 * time.Second,
		Authenticate: func(r *http.Request) error { r.SetBasicAuth("token", s.Token()); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if n, _, err := runStatement(ctx, c, s.WarehouseIDs()[0], "SELECT id FROM range(10)"); err != nil || n != 10 {
		t.Fatalf("Basic through the proxy: %d rows, %v", n, err)
	}
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	// The server closes the operation before the proxy records its
	// answer: wait for both.
	waitFor(t, "the abandoned operation closed with the client's Basic credentials", 60*time.Second, func() bool {
		if simOpen(s, op.Ref.StatementID) {
			return false
		}
		var doc adminapi.OperationsDoc
		adminGet(t, p, adminapi.PathOperations, &doc)
		for _, f := range doc.Operations {
			if f.StatementID == op.Ref.StatementID {
				return f.Close.Outcome == sources.ProxyClosedByProxy
			}
		}
		return false
	})
}
