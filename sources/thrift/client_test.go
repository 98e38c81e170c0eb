package thrift

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// pollToTerminal polls until the server reports a terminal state; the fake
// finishes after a fixed number of polls, so the bound is a count.
func pollToTerminal(t *testing.T, c *Client, ref sources.Ref) sources.Status {
	t.Helper()
	for i := 0; i < 10; i++ {
		st, err := c.Status(context.Background(), ref)
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		if st.State.Terminal() {
			return st
		}
		if st.State != model.StateRunning {
			t.Fatalf("poll %d: state %s, want RUNNING until terminal", i, st.State)
		}
	}
	t.Fatal("not terminal after 10 polls")
	return sources.Status{}
}

func TestEndToEnd(t *testing.T) {
	f := newFakeService()
	srv, rec := newTestServer(t, f)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()

	s, err := c.OpenSession(ctx, "wh1")
	if err != nil {
		t.Fatalf("OpenSession: %v", err)
	}
	if len(s.ID()) != 36 {
		t.Fatalf("session id %q is not a UUID", s.ID())
	}
	op, err := c.Execute(ctx, s, "SELECT id FROM range(7)", false)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if op.Direct != nil {
		t.Fatalf("direct results without asking: %+v", op.Direct)
	}
	if op.Ref.WarehouseID != "wh1" || len(op.Ref.Secret) != 16 || !op.HasResultSet {
		t.Fatalf("operation ref %+v hasResultSet %v", op.Ref, op.HasResultSet)
	}
	guid, _ := GUIDFromStatementID(op.Ref.StatementID)
	if !reflect.DeepEqual(guid, op.Handle.OperationId.GUID) {
		t.Fatalf("statement id %s does not round-trip to the handle GUID", op.Ref.StatementID)
	}

	st := pollToTerminal(t, c, op.Ref)
	if st.State != model.StateFinished {
		t.Fatalf("state %s, want FINISHED", st.State)
	}
	wantStart := time.UnixMilli(1_700_000_000_000).UTC()
	if !st.StartedAt.Equal(wantStart) || !st.CompletedAt.Equal(wantStart.Add(1500*time.Millisecond)) {
		t.Fatalf("started %v completed %v", st.StartedAt, st.CompletedAt)
	}
	if st.ClientLastActivity == nil || st.ClientLastActivity.UnixMilli() != f.lastActivity {
		t.Fatalf("client last activity %v, want %d ms", st.ClientLastActivity, f.lastActivity)
	}
	if st.Open == nil || !*st.Open {
		t.Fatalf("open %v, want true", st.Open)
	}

	cols, err := c.GetResultSetMetadata(ctx, op.Ref)
	if err != nil {
		t.Fatalf("GetResultSetMetadata: %v", err)
	}
	if len(cols) != 2 || cols[0].Name != "id" || cols[0].Type.String() != "BIGINT_TYPE" || cols[1].Position != 2 {
		t.Fatalf("columns %+v", cols)
	}

	// Page through 7 rows, 3 at a time: offsets 0, 3, 6.
	var rows [][]any
	for page := 0; ; page++ {
		p, err := c.FetchResults(ctx, op.Ref, 3)
		if err != nil {
			t.Fatalf("FetchResults page %d: %v", page, err)
		}
		if p.StartRowOffset != int64(len(rows)) {
			t.Fatalf("page %d starts at %d, want %d", page, p.StartRowOffset, len(rows))
		}
		rows = append(rows, p.Rows...)
		if !p.HasMoreRows {
			break
		}
		if page > 5 {
			t.Fatal("too many pages")
		}
	}
	if len(rows) != 7 {
		t.Fatalf("%d rows, want 7", len(rows))
	}
	for i, r := range rows {
		if r[0] != int64(i) {
			t.Fatalf("row %d id %v (%T)", i, r[0], r[0])
		}
		if i%3 == 2 {
			if r[1] != nil {
				t.Fatalf("row %d label %v, want NULL", i, r[1])
			}
		} else if r[1] != "row-"+string(rune('0'+i)) {
			t.Fatalf("row %d label %v", i, r[1])
		}
	}
	// A fetch past the end is an empty last page, not an error.
	p, err := c.FetchResults(ctx, op.Ref, 3)
	if err != nil || len(p.Rows) != 0 || p.HasMoreRows {
		t.Fatalf("fetch past end: %+v, %v", p, err)
	}

	if err := c.Close(ctx, op.Ref); err != nil {
		t.Fatalf("CloseOperation: %v", err)
	}
	if err := c.CloseSession(ctx, s); err != nil {
		t.Fatalf("CloseSession: %v", err)
	}
	_, err = c.Status(ctx, op.Ref)
	if !errors.Is(err, sources.ErrHandleGone) {
		t.Fatalf("status after close: %v, want ErrHandleGone", err)
	}
	if !strings.Contains(err.Error(), op.Ref.StatementID) || !strings.Contains(err.Error(), "GetOperationStatus") {
		t.Fatalf("error %q does not name the call and the statement", err)
	}
	// Closing again: the handle is gone, which the close queue treats as done.
	if err := c.Close(ctx, op.Ref); !errors.Is(err, sources.ErrHandleGone) {
		t.Fatalf("second close: %v", err)
	}

	calls, agents, auths, ctypes := rec.snapshot()
	want := []string{"OpenSession", "ExecuteStatement", "GetOperationStatus", "GetOperationStatus",
		"GetResultSetMetadata", "FetchResults", "FetchResults", "FetchResults", "FetchResults",
		"CloseOperation", "CloseSession", "GetOperationStatus", "CloseOperation"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls\n got %v\nwant %v", calls, want)
	}
	for i := range calls {
		if agents[i] != "dbxtop/test" || auths[i] != "Bearer "+testToken || ctypes[i] != ContentType {
			t.Fatalf("call %d %s: user-agent %q content-type %q auth set %v", i, calls[i], agents[i], ctypes[i], auths[i] != "")
		}
	}
}

func TestDirectResults(t *testing.T) {
	srv, rec := newTestServer(t, newFakeService())
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	s, err := c.OpenSession(ctx, "wh1")
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, s, "SELECT id FROM range(2)", true)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	d := op.Direct
	if d == nil || d.Status == nil || d.Page == nil {
		t.Fatalf("direct results %+v", d)
	}
	if d.Status.State != model.StateFinished || !d.Closed || len(d.Columns) != 2 {
		t.Fatalf("direct status %s closed %v columns %d", d.Status.State, d.Closed, len(d.Columns))
	}
	if len(d.Page.Rows) != 2 || d.Page.Rows[1][0] != int64(1) || d.Page.HasMoreRows {
		t.Fatalf("direct page %+v", d.Page)
	}
	// The server closed it inline: the handle is gone.
	if _, err := c.Status(ctx, op.Ref); !errors.Is(err, sources.ErrHandleGone) {
		t.Fatalf("status of inline-closed op: %v", err)
	}
	calls, _, _, _ := rec.snapshot()
	if len(calls) != 3 || calls[1] != "ExecuteStatement" {
		t.Fatalf("calls %v", calls)
	}
}

func TestFailedOperationMessage(t *testing.T) {
	srv, _ := newTestServer(t, newFakeService())
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	s, err := c.OpenSession(ctx, "wh1")
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, s, "FAIL", false)
	if err != nil {
		t.Fatal(err)
	}
	st := pollToTerminal(t, c, op.Ref)
	// The display message wins over the stack-trace-laden errorMessage.
	if st.State != model.StateFailed || st.ErrorMessage != "Query has been timed out due to inactivity." {
		t.Fatalf("status %+v", st)
	}
}

func TestServerErrorStatus(t *testing.T) {
	srv, _ := newTestServer(t, newFakeService())
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	s, err := c.OpenSession(ctx, "wh1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Execute(ctx, s, "SELECT id FROM range(x)", false)
	var se *sources.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("err %v (%T), want *sources.ServerError", err, err)
	}
	if se.Call != "ExecuteStatement" || se.SQLState != "42000" || se.StatusCode != 3 || !strings.Contains(se.Message, "cannot parse") {
		t.Fatalf("server error %+v", se)
	}
}

func TestApplicationExceptionIsServerError(t *testing.T) {
	srv, _ := newTestServer(t, newFakeService())
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	s, err := c.OpenSession(ctx, "wh1")
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, s, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	// The fake refuses to fetch before FINISHED by returning a Go error,
	// which the generated processor sends as a TApplicationException.
	_, err = c.FetchResults(ctx, op.Ref, 10)
	var se *sources.ServerError
	if !errors.As(err, &se) || se.Call != "FetchResults" || !strings.Contains(se.Message, "fetch before FINISHED") {
		t.Fatalf("err %v, want ServerError carrying the exception", err)
	}
}

func TestRefWithoutSecret(t *testing.T) {
	srv, _ := newTestServer(t, newFakeService())
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	s, err := c.OpenSession(ctx, "wh1")
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, s, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	// The fake checks secrets like Hive does: zero secret → handle gone.
	ref := op.Ref
	ref.Secret = nil
	if _, err := c.Status(ctx, ref); !errors.Is(err, sources.ErrHandleGone) {
		t.Fatalf("status with zero secret: %v", err)
	}
	if _, err := c.Status(ctx, sources.Ref{StatementID: "nope", WarehouseID: "wh1"}); err == nil ||
		!strings.Contains(err.Error(), "GetOperationStatus") {
		t.Fatalf("bad statement id: %v", err)
	}
}

func TestCancel(t *testing.T) {
	srv, _ := newTestServer(t, newFakeService())
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	s, err := c.OpenSession(ctx, "wh1")
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, s, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, op.Ref); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	st, err := c.Status(ctx, op.Ref)
	if err != nil || st.State != model.StateCanceled {
		t.Fatalf("after cancel: %+v %v", st, err)
	}
}

// The client implements the poller's source interfaces (declared here to
// keep this package's tests independent of the poller package's build).
var _ interface {
	Status(context.Context, sources.Ref) (sources.Status, error)
	Cancel(context.Context, sources.Ref) error
	Close(context.Context, sources.Ref) error
	CloseIdleConnections()
} = (*Client)(nil)

func TestNewClientValidation(t *testing.T) {
	for _, host := range []string{"", "127.0.0.1:8080", "ftp://x", "http://user:" + testToken + "@h", "http://h/sql/1.0", "http://h?x=1"} {
		_, err := NewClient(Options{Host: host})
		if err == nil {
			t.Errorf("host %q accepted", host)
			continue
		}
		if strings.Contains(err.Error(), testToken) {
			t.Errorf("host %q: error leaks the token: %v", host, err)
		}
	}
	c, err := NewClient(Options{Host: "https://adb-1.azuredatabricks.net/", HTTPPath: func(id string) string { return "/x/" + id }})
	if err != nil {
		t.Fatal(err)
	}
	c.CloseIdleConnections()
	if DefaultHTTPPath("abc 1") != "/sql/1.0/warehouses/abc%201" {
		t.Fatalf("default path %q", DefaultHTTPPath("abc 1"))
	}
}

// A large page decodes whole: the allocation bounds never reject honest data.
func TestLargePage(t *testing.T) {
	srv, _ := newTestServer(t, newFakeService())
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	s, err := c.OpenSession(ctx, "wh1")
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, s, "SELECT id FROM range(50000)", false)
	if err != nil {
		t.Fatal(err)
	}
	pollToTerminal(t, c, op.Ref)
	p, err := c.FetchResults(ctx, op.Ref, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 50000 || p.Rows[49999][0] != int64(49999) || p.HasMoreRows {
		t.Fatalf("%d rows, more %v", len(p.Rows), p.HasMoreRows)
	}
}
