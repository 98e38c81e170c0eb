package databricks

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// A retry after a transport error must not ride a keep-alive connection:
// the policy marks it and the client sends it on a connection of its own.
func TestRetryAfterResetUsesNoPooledConnection(t *testing.T) {
	f := newFakeWS(t)
	var (
		mu    sync.Mutex
		n     int
		close []bool
	)
	f.handle("GET /api/2.0/sql/statements/s-run", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		close = append(close, r.Close)
		mu.Unlock()
		if first {
			resetConn(t, w)
			return
		}
		writeJSON(w, map[string]any{"statement_id": "s-run", "status": map[string]any{"state": "RUNNING"}})
	})
	c := f.client(t)
	pol := retry.NewPolicy(retry.PolicyOptions{Idle: []sources.IdleCloser{c}})
	ref := sources.Ref{StatementID: "s-run", WarehouseID: "wh1"}
	st, err := retry.Do(context.Background(), pol, retry.Call{Name: CallGetStatement, Safe: true},
		func(ctx context.Context) (sources.Status, error) { return c.Status(ctx, ref) })
	if err != nil {
		t.Fatalf("status through the policy: %v", err)
	}
	if st.State != "RUNNING" {
		t.Fatalf("state %s, want RUNNING", st.State)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(close) != 2 || close[0] || !close[1] {
		t.Fatalf("per request Connection: close = %v, want [false true] (the retry must not use a keep-alive connection)", close)
	}
}
