package sim

import (
	"context"
	"errors"
	"net/http"
	"strings"
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
		c, op := runningOverThrift(ctx, t, s)
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
	}
}

// By default the Statement Execution API knows only statements run
// through it (the simulator runs none): a Thrift-run statement is 404
// RESOURCE_DOES_NOT_EXIST to GET, cancel and DELETE, and the operation is
// untouched. StatementAPIForThrift answers it.
func TestStatementAPIAnswersThriftStatementsOnlyWhenAsked(t *testing.T) {
	for _, forThrift := range []bool{false, true} {
		s := startSim(t, Options{StatementAPIForThrift: forThrift})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, op := runningOverThrift(ctx, t, s)
		hc := httpClient(t)
		url := s.URL() + "/api/2.0/sql/statements/" + op.Ref.StatementID
		want := http.StatusNotFound
		if forThrift {
			want = http.StatusOK
		}
		for _, call := range []struct{ method, url string }{{"GET", url}, {"POST", url + "/cancel"}, {"DELETE", url}} {
			r := mustDo(t, hc, call.method, call.url, s.Token(), "dbxtop/0.1.0", "")
			if r.status != want || (!forThrift && !strings.Contains(string(r.body), `"error_code":"RESOURCE_DOES_NOT_EXIST"`)) {
				t.Errorf("forThrift=%v: %s %s: %d %s, want %d", forThrift, call.method, call.url, r.status, r.body, want)
			}
		}
		if !forThrift {
			st, err := c.GetOperationStatus(ctx, op.Ref)
			if err != nil || !st.State.Live() {
				t.Errorf("the 404s changed the operation: %+v %v", st, err)
			}
		}
	}
}

// runningOverThrift runs a long statement over Thrift, as a client would,
// and returns the client and its operation (still running).
func runningOverThrift(ctx context.Context, t *testing.T, s *Server) (*thrift.Client, *thrift.Operation) {
	t.Helper()
	c := thriftClient(t, s, "app/1")
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT sleep(60)", false)
	if err != nil {
		t.Fatal(err)
	}
	return c, op
}
