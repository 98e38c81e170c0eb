package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// By default the simulator volunteers nothing a real server would not:
// no owner activity; the zero Options refuse a rebuilt handle (zero
// secret) while the real one works; LenientHandles accepts it.
func TestNoOwnerActivityByDefaultAndStrictSecrets(t *testing.T) {
	for _, strict := range []bool{false, true} {
		s := startSim(t, Options{LenientHandles: !strict})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := thrift.NewClient(thrift.Options{Host: s.URL(), Token: s.Token(), UserAgent: "app/1"})
		if err != nil {
			t.Fatal(err)
		}
		sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
		if err != nil {
			t.Fatal(err)
		}
		op, err := c.Execute(ctx, sess, "SELECT sleep(60)", false)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.GetOperationStatus(ctx, op.Ref)
		if err != nil || st.ClientLastActivity != nil {
			t.Fatalf("strict=%v: real handle: %+v, %v (want a status without owner activity)", strict, st, err)
		}
		rebuilt := sources.Ref{StatementID: op.Ref.StatementID, WarehouseID: op.Ref.WarehouseID}
		_, err = c.GetOperationStatus(ctx, rebuilt)
		if strict != (err != nil) {
			t.Fatalf("strict=%v: rebuilt handle: %v", strict, err)
		}
		if strict && (!errors.Is(err, sources.ErrHandleUnverified) || !errors.Is(err, sources.ErrHandleGone)) {
			t.Errorf("strict: a rebuilt handle's INVALID_HANDLE must read as unverified: %v", err)
		}
		if err := c.CloseOperation(ctx, rebuilt); strict != (err != nil) {
			t.Errorf("strict=%v: close with a rebuilt handle: %v", strict, err)
		}
		c.CloseIdleConnections()
	}
}
