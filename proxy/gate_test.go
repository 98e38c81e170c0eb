package proxy

import (
	"context"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// The proxy's own Thrift calls go only to running warehouses: with the
// gate saying the warehouse stopped, the close queue does not send its
// CloseOperation (it would start the warehouse) and says why; once the
// gate says RUNNING, the queued close goes out.
func TestProxyOwnCallsOnlyToRunningWarehouses(t *testing.T) {
	s := startSim(t, "")
	wh := s.WarehouseIDs()[0]
	gate := &sources.WarehouseGate{}
	gate.Update(map[string]string{wh: "STOPPED"})
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy(), Gate: gate})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "testapp/1.0")
	sess, err := c.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := sim.ParseFaults("unavailable=1@CloseOperation")
	s.SetFaults(f)
	_ = c.CloseOperation(ctx, op.Ref) // the client's close fails: queued
	s.SetFaults(sim.Faults{})
	before := s.Stats().ObserverRequests["CloseOperation"]
	var doc adminapi.OperationsDoc
	waitFor(t, "the queue to try and refuse", 20*time.Second, func() bool {
		adminGet(t, p, adminapi.PathOperations, &doc)
		ce := doc.Operations[0].Close.LastError
		return ce != nil && strings.Contains(ce.Message, "is STOPPED; Thrift would start it")
	})
	if n := s.Stats().ObserverRequests["CloseOperation"]; n != before {
		t.Fatalf("the proxy sent %d CloseOperation to a warehouse its gate called STOPPED", n-before)
	}
	gate.Update(map[string]string{wh: "RUNNING"})
	waitFor(t, "the queued close once the warehouse runs", 20*time.Second, func() bool {
		adminGet(t, p, adminapi.PathOperations, &doc)
		return doc.Operations[0].Close.Outcome == sources.ProxyClosedByProxy
	})
}
