package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go"
	"github.com/databricks/databricks-sdk-go/apierr"
	dbsqlsvc "github.com/databricks/databricks-sdk-go/service/sql"
	dbsql "github.com/databricks/databricks-sql-go"
	"github.com/databricks/databricks-sql-go/driverctx"

	"github.com/dbxtop/dbxtop/sources/sim"
)

// TestReaperAfterNaiveClientGivesUp reproduces the orphan story (README; docs/simulator.md, The reaper) end to end
// with the real driver: its retries disabled, one reset status poll makes
// it give up without cancel or close; the simulator's reaper then fails the
// orphan with the inactivity message, visible through the stock SDK's
// query history and statement API; the leak reaper closes it later.
func TestReaperAfterNaiveClientGivesUp(t *testing.T) {
	t.Parallel()
	// StatementAPIForThrift: the SDK's statement API reads the orphan the driver ran over Thrift.
	s := startSimOpts(t, sim.Options{
		StatementAPIForThrift: true,
		Faults:                "reset=1@GetOperationStatus",
		IdleTimeout:           2 * time.Second,
		LeakTimeout:           3 * time.Second,
		ReapEvery:             100 * time.Millisecond,
	})
	g := newGuardTransport(simHostPort(t, s), false)
	db := openConnector(t, s, firstWarehouse(t, s), g, dbsql.WithRetries(-1, 0, 0))
	db.SetMaxIdleConns(4) // keep the session: closing it would close the op

	var id string
	ctx := driverctx.NewContextWithQueryIdCallback(context.Background(), func(q string) {
		if q != "" {
			id = q
		}
	})
	var v any
	err := db.QueryRowContext(ctx, "SELECT sleep(60)").Scan(&v)
	if err == nil {
		t.Fatal("every status poll is reset, yet the naive client succeeded")
	}
	if id == "" {
		t.Fatalf("no statement id learned: %v", err)
	}
	tr := getTruth(t, s)
	if o, _ := tr.op(id); o.State != "RUNNING" || !o.Open {
		t.Fatalf("right after the client gave up: %+v, want RUNNING and open (abandoned)", o)
	}

	tr = waitFor(t, s, 15*time.Second, "the orphan reaped as FAILED", func(tr truth) bool {
		o, _ := tr.op(id)
		return o.State == "FAILED"
	})
	// Reaped no earlier than the idle timeout after the owner's last
	// activity (the reset poll never reached the handler, so it is not
	// activity: its last is the ExecuteStatement).
	if o, _ := tr.op(id); o.OwnerLastActivity == nil {
		t.Errorf("truth has no owner_last_activity for %s", id)
	} else if d := time.Since(*o.OwnerLastActivity); d < 2*time.Second {
		t.Errorf("reaped %s after the owner's last activity; the idle timeout is 2 s", d)
	}
	w := workspaceClient(t, s, 0)
	st, err := w.StatementExecution.GetStatementByStatementId(context.Background(), id)
	if err != nil {
		t.Fatalf("GetStatement(%s): %v", id, err)
	}
	if st.Status == nil || st.Status.State != dbsqlsvc.StatementStateFailed || st.Status.Error == nil ||
		!strings.Contains(st.Status.Error.Message, sim.InactivityMessage) {
		t.Errorf("GetStatement of the reaped orphan: %+v, want FAILED with %q", st.Status, sim.InactivityMessage)
	}
	qs, err := w.QueryHistory.List(context.Background(), dbsqlsvc.ListQueryHistoryRequest{
		FilterBy: &dbsqlsvc.QueryFilter{StatementIds: []string{id}},
	})
	if err != nil {
		t.Fatalf("QueryHistory.List(statement_ids=%s): %v", id, err)
	}
	if len(qs.Res) != 1 || qs.Res[0].Status != dbsqlsvc.QueryStatusFailed || !strings.Contains(qs.Res[0].ErrorMessage, "inactivity") {
		t.Errorf("query history of the reaped orphan: %+v, want one FAILED with the inactivity message", qs.Res)
	}
	// Nobody closes it: the leak reaper does.
	waitFor(t, s, 15*time.Second, "the failed orphan closed by the leak reaper", func(tr truth) bool {
		o, _ := tr.op(id)
		return !o.Open
	})
	stt := getStats(t, s)
	if stt.Operations["reaped_inactive"] < 1 || stt.Operations["reaped_unclosed"] < 1 {
		t.Errorf("stats operations %v: want reaped_inactive and reaped_unclosed ≥ 1", stt.Operations)
	}
}

// TestAuthRefused: a wrong token is refused with 401 and a Databricks
// error body, for both clients, and neither error carries a token.
func TestAuthRefused(t *testing.T) {
	t.Parallel()
	s := startSim(t, "")
	const wrong = "wrong-token-0123456789"

	w, err := databricks.NewWorkspaceClient(&databricks.Config{Host: s.URL(), Token: wrong})
	if err != nil {
		t.Fatalf("NewWorkspaceClient: %v", err)
	}
	_, err = w.Warehouses.ListAll(context.Background(), dbsqlsvc.ListWarehousesRequest{})
	var ae *apierr.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Errorf("SDK with a wrong token: %v, want a 401 APIError", err)
	} else if ae.ErrorCode == "" {
		t.Errorf("401 without error_code: %+v", ae)
	}

	g := newGuardTransport(simHostPort(t, s), false)
	host, port := hostPort(t, s)
	c, err := dbsql.NewConnector(dbsql.WithServerHostname("http://"+host), dbsql.WithPort(port),
		dbsql.WithHTTPPath("/sql/1.0/warehouses/"+firstWarehouse(t, s)), dbsql.WithAccessToken(wrong),
		dbsql.WithTransport(g), dbsql.WithRetries(-1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	db := sqlOpenDB(t, c, g)
	err = db.PingContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("driver with a wrong token: %v, want an HTTP 401", err)
	}
	for _, text := range []string{errText(err), errText(ae)} {
		if strings.Contains(text, wrong) || strings.Contains(text, s.Token()) {
			t.Errorf("error text carries a token: %q", text)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
