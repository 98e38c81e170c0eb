package proxy

import (
	"context"
	"errors"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// The close queue defers to the client: its first try waits past the
// drivers' own close retries, and a client's retried close that gets
// INVALID_HANDLE for exactly the handle the proxy closed for it is
// answered as a successful close. Any other INVALID_HANDLE goes back as
// it came.
func TestCloseQueueDefersToTheClient(t *testing.T) {
	s := startSim(t, "")
	const deferFor = 400 * time.Millisecond
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy(), CloseDefer: deferFor})
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
	other, err := c.Execute(ctx, sess, "SELECT 2", false)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := sim.ParseFaults("unavailable=1@CloseOperation")
	s.SetFaults(f)
	failedAt := time.Now()
	if err := c.CloseOperation(ctx, op.Ref); err == nil {
		t.Fatal("the injected close failure did not happen")
	}
	s.SetFaults(sim.Faults{})
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	fact := func(id string) sources.ProxyOperation {
		for _, f := range doc.Operations {
			if f.StatementID == id {
				return f
			}
		}
		t.Fatalf("no facts for %s", id)
		return sources.ProxyOperation{}
	}
	if f := fact(op.Ref.StatementID); !f.Close.Queued || f.Close.NextTry.Before(failedAt.Add(deferFor-50*time.Millisecond)) {
		t.Fatalf("queued close %+v: want the first try after %s", f.Close, deferFor)
	}
	waitFor(t, "the queue to close it", 20*time.Second, func() bool {
		adminGet(t, p, adminapi.PathOperations, &doc)
		return fact(op.Ref.StatementID).Close.Outcome == sources.ProxyClosedByProxy
	})
	if took := time.Since(failedAt); took < deferFor {
		t.Errorf("the queue closed it %s after the client's failure, before the %s deferral", took, deferFor)
	}
	// The client's own retry comes late: the server says INVALID_HANDLE,
	// the client is told its close succeeded.
	if err := c.CloseOperation(ctx, op.Ref); err != nil {
		t.Fatalf("the client's retried close: %v; want success (the proxy closed it for the client)", err)
	}
	if n := p.Stats().CloseAnswered; n != 1 {
		t.Errorf("client closes answered for the proxy's: %d, want 1", n)
	}
	// A handle the proxy did not close: the client's second close gets
	// the server's INVALID_HANDLE, as without the proxy.
	if err := c.CloseOperation(ctx, other.Ref); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseOperation(ctx, other.Ref); !errors.Is(err, sources.ErrHandleGone) {
		t.Errorf("second close of a handle the client closed: %v, want the server's INVALID_HANDLE", err)
	}
	// The right GUID with another secret: not the handle the proxy closed.
	forged := op.Ref
	forged.Secret = randomSecret()
	if err := c.CloseOperation(ctx, forged); !errors.Is(err, sources.ErrHandleGone) {
		t.Errorf("close with another secret: %v, want the server's INVALID_HANDLE", err)
	}
}
