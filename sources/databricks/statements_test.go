package databricks

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

func TestStatusMapsStatementStates(t *testing.T) {
	f := newFakeWS(t)
	states := map[string]string{"s-run": "RUNNING", "s-ok": "SUCCEEDED", "s-closed": "CLOSED", "s-fail": "FAILED"}
	for id, st := range states {
		id, st := id, st
		f.handle("GET /api/2.0/sql/statements/"+id, func(w http.ResponseWriter, r *http.Request) {
			body := map[string]any{"statement_id": id, "status": map[string]any{"state": st}}
			if st == "FAILED" {
				body["status"] = map[string]any{"state": st, "error": map[string]any{"error_code": "DEADLINE_EXCEEDED", "message": "Query has been timed out due to inactivity."}}
			}
			writeJSON(w, body)
		})
	}
	c := f.client(t)
	yes, no := true, false
	want := map[string]struct {
		state model.State
		open  *bool
	}{
		"s-run":    {model.StateRunning, &yes},
		"s-ok":     {model.StateFinished, &yes},
		"s-closed": {model.StateClosed, &no},
		"s-fail":   {model.StateFailed, nil}, // FAILED reads the same closed or not
	}
	for id, w := range want {
		st, err := c.Status(context.Background(), sources.Ref{StatementID: id, WarehouseID: "wh1"})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if st.State != w.state || (st.Open == nil) != (w.open == nil) || (w.open != nil && *st.Open != *w.open) {
			t.Errorf("%s: got state %s open %v, want %s %v", id, st.State, st.Open, w.state, w.open)
		}
		if st.ClientLastActivity != nil {
			t.Errorf("%s: the Statement Execution API cannot know client activity", id)
		}
		if id == "s-fail" && st.ErrorMessage != "Query has been timed out due to inactivity." {
			t.Errorf("error message lost: %q", st.ErrorMessage)
		}
	}
}

func TestStatusCloseCancelGone(t *testing.T) {
	f := newFakeWS(t)
	gone := func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Statement not found.", "req-gone")
	}
	f.handle("GET /api/2.0/sql/statements/s-x", gone)
	f.handle("DELETE /api/2.0/sql/statements/s-x", gone)
	f.handle("POST /api/2.0/sql/statements/s-x/cancel", gone)
	c := f.client(t)
	ref := sources.Ref{StatementID: "s-x"}
	_, errStatus := c.Status(context.Background(), ref)
	for call, err := range map[string]error{
		CallGetStatement:    errStatus,
		CallCloseStatement:  c.Close(context.Background(), ref),
		CallCancelExecution: c.Cancel(context.Background(), ref),
	} {
		if !errors.Is(err, sources.ErrHandleGone) {
			t.Errorf("%s: want ErrHandleGone, got %v", call, err)
		}
		var he *sources.HTTPError
		if !errors.As(err, &he) || he.Call != call || he.RequestID != "req-gone" {
			t.Errorf("%s: HTTPError lost or wrong: %+v", call, he)
		}
	}
}

func TestCloseSendsDeleteAndCancelPosts(t *testing.T) {
	f := newFakeWS(t)
	f.handle("DELETE /api/2.0/sql/statements/s-1", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, map[string]any{}) })
	f.handle("POST /api/2.0/sql/statements/s-1/cancel", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, map[string]any{}) })
	c := f.client(t)
	ref := sources.Ref{StatementID: "s-1"}
	if err := c.Close(context.Background(), ref); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Cancel(context.Background(), ref); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if f.count("DELETE /api/2.0/sql/statements/s-1") != 1 || f.count("POST /api/2.0/sql/statements/s-1/cancel") != 1 {
		t.Errorf("requests: %v", f.counts)
	}
}

func TestCloseFailureIsOneAttempt(t *testing.T) {
	f := newFakeWS(t)
	f.handle("DELETE /api/2.0/sql/statements/s-1", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusServiceUnavailable, "TEMPORARILY_UNAVAILABLE", "try later", "req-503")
	})
	c := f.client(t)
	err := c.Close(context.Background(), sources.Ref{StatementID: "s-1"})
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 503 || he.Call != CallCloseStatement {
		t.Fatalf("want 503 HTTPError from CloseStatement, got %v", err)
	}
	if errors.Is(err, sources.ErrHandleGone) {
		t.Errorf("a 503 is not gone")
	}
	if n := f.count("DELETE /api/2.0/sql/statements/s-1"); n != 1 {
		t.Errorf("the SDK retried a 503: %d requests", n)
	}
}
