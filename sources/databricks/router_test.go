package databricks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
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

// unverified is what sources/thrift returns for INVALID_HANDLE to a handle
// rebuilt without its secret.
func unverified(id string) error {
	return fmt.Errorf("GetOperationStatus %s: %w", id, errors.Join(sources.ErrHandleGone, sources.ErrHandleUnverified))
}

// TestStatementAPI404IsNotGone: on a strict server (Thrift refuses rebuilt
// handles) whose Statement Execution API knows only its own statements,
// the API's 404 is "cannot tell", never "gone": query history gives the
// state, openness and activity stay unknown, and a statement history does
// not list stays unread (not gone). On a server that answered a rebuilt
// handle, its INVALID_HANDLE is gone. A warehouse that is not running
// falls back to history the same way.
func TestStatementAPI404IsNotGone(t *testing.T) {
	f := newFakeWS(t)
	for _, id := range []string{"running", "ended", "unlisted"} {
		for _, route := range []string{"GET /api/2.0/sql/statements/" + id, "DELETE /api/2.0/sql/statements/" + id,
			"POST /api/2.0/sql/statements/" + id + "/cancel"} {
			f.handle(route, func(w http.ResponseWriter, r *http.Request) {
				writeError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Statement "+id+" does not exist.", "")
			})
		}
	}
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		res := []map[string]any{}
		for _, id := range r.URL.Query()["filter_by.statement_ids"] {
			switch id {
			case "running":
				res = append(res, map[string]any{"query_id": id, "status": "RUNNING", "warehouse_id": "wh", "query_start_time_ms": 1700000000000})
			case "ended":
				res = append(res, map[string]any{"query_id": id, "status": "FINISHED", "warehouse_id": "wh",
					"query_start_time_ms": 1700000000000, "query_end_time_ms": 1700000005000})
			}
		}
		writeJSON(w, map[string]any{"res": res})
	})
	rest := f.client(t)
	rest.Gate().Update(map[string]string{"wh": "RUNNING", "stopped": "STOPPED"})
	primary := &scriptedStatus{answers: map[string]error{
		"running": unverified("running"), "ended": unverified("ended"), "unlisted": unverified("unlisted"),
	}}
	r := StatusWithFallback(primary, rest)
	ctx := context.Background()

	for _, id := range []string{"running", "ended"} {
		st, err := r.Status(ctx, sources.Ref{StatementID: id, WarehouseID: "wh"})
		if err != nil || st.Open != nil || st.ClientLastActivity != nil || st.Source != model.StatusViaHistory ||
			!strings.Contains(st.Note, "dbxtop proxy") {
			t.Fatalf("%s: %+v %v, want history's state, openness and activity unknown, a note naming the proxy", id, st, err)
		}
		if want := map[string]model.State{"running": model.StateRunning, "ended": model.StateFinished}[id]; st.State != want {
			t.Errorf("%s: state %s, want %s", id, st.State, want)
		}
	}
	_, err := r.Status(ctx, sources.Ref{StatementID: "unlisted", WarehouseID: "wh"})
	if !errors.Is(err, sources.ErrHandleUnverified) {
		t.Errorf("unlisted: %v, want an unverified answer (not gone)", err)
	}
	st, err := r.Status(ctx, sources.Ref{StatementID: "running", WarehouseID: "stopped"})
	if err != nil || st.State != model.StateRunning || st.Open != nil || st.Note == "" {
		t.Errorf("stopped warehouse: %+v %v", st, err)
	}
	for name, act := range map[string]func(context.Context, sources.Ref) error{"close": rest.Close, "cancel": rest.Cancel} {
		if err := act(ctx, sources.Ref{StatementID: "running"}); !errors.Is(err, sources.ErrHandleUnverified) {
			t.Errorf("%s: the API's 404 must not read as done: %v", name, err)
		}
	}

	// A server that answers a rebuilt handle looks handles up without the
	// secret: its INVALID_HANDLE is then news.
	primary.answers["ok"] = nil
	if _, err := r.Status(ctx, sources.Ref{StatementID: "ok", WarehouseID: "wh"}); err != nil {
		t.Fatal(err)
	}
	_, err = r.Status(ctx, sources.Ref{StatementID: "unlisted", WarehouseID: "wh"})
	if !errors.Is(err, sources.ErrHandleGone) || errors.Is(err, sources.ErrHandleUnverified) {
		t.Errorf("lenient server's INVALID_HANDLE: %v, want gone", err)
	}
}
