package sim

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// thriftClient is sources/thrift's client with the given User-Agent.
func thriftClient(t testing.TB, s *Server, ua string) *thrift.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	c, err := thrift.NewClient(thrift.Options{Host: s.URL(), Token: s.Token(), UserAgent: ua, Transport: tr, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestThriftSelectOneDirectResults(t *testing.T) {
	s := startSim(t, Options{})
	ctx := context.Background()
	c := thriftClient(t, s, "databricks-sql-go/1.14.0")
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT 1", true)
	if err != nil {
		t.Fatal(err)
	}
	if !uuidV4.MatchString(op.Ref.StatementID) {
		t.Errorf("statement id %q", op.Ref.StatementID)
	}
	d := op.Direct
	if d == nil || d.Status == nil || d.Status.State != model.StateFinished || !d.Closed || d.Page == nil {
		t.Fatalf("direct results %+v", d)
	}
	if len(d.Page.Rows) != 1 || d.Page.Rows[0][0] != int32(1) || d.Page.HasMoreRows {
		t.Errorf("rows %v", d.Page.Rows)
	}
	if len(d.Columns) != 1 || d.Columns[0].Position != 1 || d.Columns[0].Type != tc.TTypeId_INT_TYPE {
		t.Errorf("columns %+v", d.Columns)
	}
	// Closed inline: the handle is gone now.
	if _, err := c.GetOperationStatus(ctx, op.Ref); !errors.Is(err, sources.ErrHandleGone) {
		t.Errorf("status after direct close: %v, want ErrHandleGone", err)
	}
	tr := getTruth(t, s)
	if len(tr.Operations) != 1 || tr.Operations[0].State != "CLOSED" || tr.Operations[0].ClientKind != KindExternal ||
		tr.Operations[0].StatementID != op.Ref.StatementID {
		t.Errorf("truth %+v", tr.Operations)
	}
	if err := c.CloseSession(ctx, sess); err != nil {
		t.Error(err)
	}
}

func TestThriftRangePagedWithoutDirectResults(t *testing.T) {
	s := startSim(t, Options{OwnerActivity: true})
	ctx := context.Background()
	c := thriftClient(t, s, "simclient/1.0 (healthy)")
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[1])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT id FROM range(1000)", false)
	if err != nil || op.Direct != nil {
		t.Fatalf("execute: %v direct=%v", err, op.Direct)
	}
	st, err := c.GetOperationStatus(ctx, op.Ref)
	if err != nil || st.State != model.StateFinished || st.ClientLastActivity == nil || st.Open == nil || !*st.Open {
		t.Fatalf("status %+v %v", st, err)
	}
	cols, err := c.GetResultSetMetadata(ctx, op.Ref)
	if err != nil || len(cols) != 1 || cols[0].Name != "id" || cols[0].Type != tc.TTypeId_BIGINT_TYPE || cols[0].Position != 1 {
		t.Fatalf("metadata %+v %v", cols, err)
	}
	var sum, n, pages int64
	for {
		p, err := c.FetchResults(ctx, op.Ref, 300)
		if err != nil {
			t.Fatal(err)
		}
		if p.StartRowOffset != n {
			t.Fatalf("page starts at %d, want %d", p.StartRowOffset, n)
		}
		if int64(len(p.Rows)) > 300 {
			t.Fatalf("page of %d rows ignores maxRows 300", len(p.Rows))
		}
		for _, r := range p.Rows {
			sum += r[0].(int64)
			n++
		}
		pages++
		if !p.HasMoreRows {
			break
		}
	}
	if n != 1000 || sum != 499500 || pages != 4 {
		t.Errorf("rows %d sum %d pages %d", n, sum, pages)
	}
	// Past the end: an empty page, not an error.
	p, err := c.FetchResults(ctx, op.Ref, 300)
	if err != nil || len(p.Rows) != 0 || p.HasMoreRows {
		t.Errorf("past end: %+v %v", p, err)
	}
	if err := c.CloseOperation(ctx, op.Ref); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseOperation(ctx, op.Ref); !errors.Is(err, sources.ErrHandleGone) {
		t.Errorf("second close: %v, want ErrHandleGone", err)
	}
	if tr := getTruth(t, s); tr.Operations[0].ClientKind != KindHealthy {
		t.Errorf("kind %q", tr.Operations[0].ClientKind)
	}
}

// FETCH_FIRST rewinds; OpenSession answers exactly SUCCESS; metadata sets
// COLUMN_BASED_SET — checked with the bare generated client.
func TestThriftWireDetails(t *testing.T) {
	// Lenient handles: the test reads a handle rebuilt from the GUID alone.
	s := startSim(t, Options{OwnerActivity: true, LenientHandles: true})
	ctx := context.Background()
	hc := httpClient(t)
	trans, err := athrift.NewTHttpClientWithOptions(s.URL()+"/sql/1.0/warehouses/"+s.WarehouseIDs()[0], athrift.THttpClientOptions{Client: hc})
	if err != nil {
		t.Fatal(err)
	}
	trans.(*athrift.THttpClient).SetHeader("Authorization", "Bearer "+s.Token())
	pf := athrift.NewTBinaryProtocolFactoryConf(nil)
	c := tc.NewTCLIServiceClientFactory(trans, pf)
	i64 := int64(tc.TProtocolVersion_SPARK_CLI_SERVICE_PROTOCOL_V8)
	or, err := c.OpenSession(ctx, &tc.TOpenSessionReq{ClientProtocol: 0, ClientProtocolI64: &i64})
	if err != nil {
		t.Fatal(err)
	}
	if or.Status.StatusCode != tc.TStatusCode_SUCCESS_STATUS || or.Status.InfoMessages != nil ||
		or.ServerProtocolVersion != tc.TProtocolVersion_SPARK_CLI_SERVICE_PROTOCOL_V8 {
		t.Errorf("OpenSession %+v", or)
	}
	er, err := c.ExecuteStatement(ctx, &tc.TExecuteStatementReq{SessionHandle: or.SessionHandle, Statement: "SELECT id FROM range(5)", RunAsync: true})
	if err != nil {
		t.Fatal(err)
	}
	h := er.OperationHandle
	if !h.HasResultSet {
		t.Error("hasResultSet false")
	}
	mr, err := c.GetResultSetMetadata(ctx, &tc.TGetResultSetMetadataReq{OperationHandle: h})
	if err != nil || mr.GetResultFormat() != tc.TSparkRowSetType_COLUMN_BASED_SET {
		t.Errorf("metadata %+v %v", mr, err)
	}
	fetch := func(o tc.TFetchOrientation) []int64 {
		fr, err := c.FetchResults(ctx, &tc.TFetchResultsReq{OperationHandle: h, Orientation: o, MaxRows: 3})
		if err != nil {
			t.Fatal(err)
		}
		return fr.Results.Columns[0].I64Val.Values
	}
	a, b, first := fetch(tc.TFetchOrientation_FETCH_NEXT), fetch(tc.TFetchOrientation_FETCH_NEXT), fetch(tc.TFetchOrientation_FETCH_FIRST)
	if len(a) != 3 || len(b) != 2 || b[0] != 3 || len(first) != 3 || first[0] != 0 {
		t.Errorf("pages %v %v, FETCH_FIRST %v", a, b, first)
	}
	// Lenient: a handle rebuilt from the GUID alone works.
	rebuilt := &tc.TOperationHandle{OperationId: &tc.THandleIdentifier{GUID: h.OperationId.GUID, Secret: make([]byte, 16)},
		OperationType: tc.TOperationType_EXECUTE_STATEMENT, HasResultSet: true}
	sr, err := c.GetOperationStatus(ctx, &tc.TGetOperationStatusReq{OperationHandle: rebuilt})
	if err != nil || sr.Status.StatusCode != tc.TStatusCode_SUCCESS_STATUS || sr.OperationState == nil ||
		sr.OperationStarted == nil || sr.OperationCompleted == nil || sr.DbxtopClientLastActivityMs == nil {
		t.Errorf("status with a rebuilt handle: %+v %v", sr, err)
	}
	// Unknown handle: INVALID_HANDLE, with operationState still present.
	unknown := &tc.TOperationHandle{OperationId: &tc.THandleIdentifier{GUID: make([]byte, 16), Secret: make([]byte, 16)}}
	sr, err = c.GetOperationStatus(ctx, &tc.TGetOperationStatusReq{OperationHandle: unknown})
	if err != nil || sr.Status.StatusCode != tc.TStatusCode_INVALID_HANDLE_STATUS || sr.OperationState == nil {
		t.Errorf("unknown handle: %+v %v", sr, err)
	}
}

// Observer calls (User-Agent dbxtop/…) never count as the owner's
// activity; owner calls do.
func TestObserverDoesNotCountAsActivity(t *testing.T) {
	clk := NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	s := startSim(t, Options{OwnerActivity: true, Clock: clk, IdleTimeout: time.Minute, ReapEvery: time.Hour})
	ctx := context.Background()
	owner := thriftClient(t, s, "simclient/1.0 (abandons)")
	observer := thriftClient(t, s, "dbxtop/0.1.0")
	sess, err := owner.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := owner.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	clk.Advance(30 * time.Second)
	st, err := observer.GetOperationStatus(ctx, op.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != model.StateRunning || st.ClientLastActivity == nil || !st.ClientLastActivity.Equal(start) {
		t.Fatalf("observer saw %+v; last activity should stay at %v", st, start)
	}
	clk.Advance(31 * time.Second)
	s.store.reap()
	st, err = observer.GetOperationStatus(ctx, op.Ref)
	if err != nil || st.State != model.StateFailed || st.ErrorMessage != InactivityMessage {
		t.Fatalf("after idle timeout: %+v %v", st, err)
	}
	if n := s.Stats().Operations.ReapedInactive; n != 1 {
		t.Errorf("reaped_inactive = %d", n)
	}
	// An owner poll moves the activity.
	op2, _ := owner.Execute(ctx, sess, "SELECT sleep(600)", false)
	clk.Advance(10 * time.Second)
	if _, err := owner.GetOperationStatus(ctx, op2.Ref); err != nil {
		t.Fatal(err)
	}
	st, _ = observer.GetOperationStatus(ctx, op2.Ref)
	if st.ClientLastActivity == nil || !st.ClientLastActivity.Equal(clk.Now()) {
		t.Errorf("owner poll not counted: %+v", st)
	}
	// Observer cancel works (and is not owner activity either).
	if err := observer.CancelOperation(ctx, op2.Ref); err != nil {
		t.Fatal(err)
	}
	if st, _ := observer.GetOperationStatus(ctx, op2.Ref); st.State != model.StateCanceled {
		t.Errorf("after cancel: %s", st.State)
	}
}

func TestThriftResetFault(t *testing.T) {
	s := startSim(t, Options{Faults: "reset=1@GetOperationStatus"})
	ctx := context.Background()
	c := thriftClient(t, s, "dbxtop/test")
	sess, err := c.OpenSession(ctx, s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetOperationStatus(ctx, op.Ref)
	var te *thrift.TransportError
	if !errors.As(err, &te) || !isReset(err) {
		t.Fatalf("err = %v, want a transport reset", err)
	}
	if got := s.Stats().Requests["GetOperationStatus"]; got != 1 {
		t.Errorf("requests = %v", s.Stats().Requests)
	}
}
