package databricks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// scriptedStatus is a primary status source answering from a table; it
// counts its calls so the test can see when the router stops asking.
type scriptedStatus struct {
	answers map[string]error
	calls   int
}

func (s *scriptedStatus) Status(_ context.Context, ref sources.Ref) (sources.Status, error) {
	s.calls++
	if err := s.answers[ref.StatementID]; err != nil {
		return sources.Status{}, err
	}
	at := time.Unix(1700000000, 0)
	return sources.Status{State: model.StateRunning, ClientLastActivity: &at}, nil
}

func TestStatusWithFallback(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/statements/live", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"statement_id": "live", "status": map[string]any{"state": "RUNNING"}})
	})
	f.handle("GET /api/2.0/sql/statements/closed", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"statement_id": "closed", "status": map[string]any{"state": "CLOSED"}})
	})
	rest := f.client(t)
	primary := &scriptedStatus{answers: map[string]error{
		"closed": fmt.Errorf("GetOperationStatus: %w", sources.ErrHandleGone),
		"reset":  fmt.Errorf("GetOperationStatus: %w", syscall.ECONNRESET),
		"live":   fmt.Errorf("GetOperationStatus: %w", sources.ErrHandleGone),
	}}
	rest.Gate().Update(map[string]string{"wh": "RUNNING"})
	r := StatusWithFallback(primary, rest)

	st, err := r.Status(context.Background(), sources.Ref{StatementID: "ok", WarehouseID: "wh"})
	if err != nil || st.ClientLastActivity == nil {
		t.Fatalf("primary answer not used: %+v %v", st, err)
	}
	if _, err := r.Status(context.Background(), sources.Ref{StatementID: "reset", WarehouseID: "wh"}); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a transport error must reach the poller unchanged, got %v", err)
	}
	if f.total() != 0 {
		t.Fatalf("fell back on a transport error")
	}
	// Gone on both sides agrees: primary stays in use.
	st, err = r.Status(context.Background(), sources.Ref{StatementID: "closed", WarehouseID: "wh"})
	if err != nil || st.State != model.StateClosed || r.(*statusRouter).PrimaryDisabled() {
		t.Fatalf("closed statement: %+v %v disabled=%v", st, err, r.(*statusRouter).PrimaryDisabled())
	}
	// Three confirmations and primary's "gone" is taken without asking REST.
	for i := 0; i < verifyGone-1; i++ {
		_, _ = r.Status(context.Background(), sources.Ref{StatementID: "closed", WarehouseID: "wh"})
	}
	restBefore := f.total()
	if _, err := r.Status(context.Background(), sources.Ref{StatementID: "closed", WarehouseID: "wh"}); !errors.Is(err, sources.ErrHandleGone) {
		t.Fatalf("trusted primary: want ErrHandleGone, got %v", err)
	}
	if f.total() != restBefore {
		t.Errorf("REST still asked after %d confirmations", verifyGone)
	}
	// A fresh router that meets a live statement first stops trusting primary.
	r = StatusWithFallback(primary, rest)
	st, err = r.Status(context.Background(), sources.Ref{StatementID: "live", WarehouseID: "wh"})
	if err != nil || st.State != model.StateRunning {
		t.Fatalf("REST fallback: %+v %v", st, err)
	}
	// Primary called a live statement gone: it is not asked again.
	before := primary.calls
	if _, err := r.Status(context.Background(), sources.Ref{StatementID: "live", WarehouseID: "wh"}); err != nil {
		t.Fatal(err)
	}
	if primary.calls != before {
		t.Errorf("primary still asked after it proved blind")
	}
	if !r.(*statusRouter).PrimaryDisabled() {
		t.Errorf("router not disabled")
	}
}
