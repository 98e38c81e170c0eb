package thrift

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// fakeService is a small in-test TCLIService: operations finish after a
// fixed number of status polls, so tests never depend on time.
type fakeService struct {
	mu       sync.Mutex
	next     uint64
	sessions map[string]bool
	ops      map[string]*fakeOp

	pollsToFinish int
	lastActivity  int64 // reported in the dbxtop extension field
}

type fakeOp struct {
	session  string
	secret   []byte
	state    tcliservice.TOperationState
	polls    int
	rows     int64
	cursor   int64
	failMsg  string
	started  int64
	complete int64
}

func newFakeService() *fakeService {
	return &fakeService{
		sessions:      map[string]bool{},
		ops:           map[string]*fakeOp{},
		pollsToFinish: 2,
		lastActivity:  1_700_000_000_123,
	}
}

func ok() *tcliservice.TStatus {
	return &tcliservice.TStatus{StatusCode: tcliservice.TStatusCode_SUCCESS_STATUS}
}

func invalidHandle(what string) *tcliservice.TStatus {
	msg := "Invalid OperationHandle: " + what
	return &tcliservice.TStatus{StatusCode: tcliservice.TStatusCode_INVALID_HANDLE_STATUS, ErrorMessage: &msg}
}

// newID makes a deterministic version-4 style GUID and a secret.
func (f *fakeService) newID() (guid, secret []byte) {
	f.next++
	guid = make([]byte, 16)
	binary.BigEndian.PutUint64(guid[8:], f.next)
	guid[0], guid[6], guid[8] = 0xab, 0x40, 0x80
	secret = make([]byte, 16)
	binary.BigEndian.PutUint64(secret, f.next*7919)
	return guid, secret
}

func (f *fakeService) OpenSession(_ context.Context, req *tcliservice.TOpenSessionReq) (*tcliservice.TOpenSessionResp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	guid, secret := f.newID()
	f.sessions[string(guid)] = true
	return &tcliservice.TOpenSessionResp{
		Status:                ok(),
		ServerProtocolVersion: tcliservice.TProtocolVersion_SPARK_CLI_SERVICE_PROTOCOL_V8,
		SessionHandle:         &tcliservice.TSessionHandle{SessionId: &tcliservice.THandleIdentifier{GUID: guid, Secret: secret}},
	}, nil
}

func (f *fakeService) CloseSession(_ context.Context, req *tcliservice.TCloseSessionReq) (*tcliservice.TCloseSessionResp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := string(req.SessionHandle.SessionId.GUID)
	if !f.sessions[id] {
		return &tcliservice.TCloseSessionResp{Status: invalidHandle("session")}, nil
	}
	delete(f.sessions, id)
	return &tcliservice.TCloseSessionResp{Status: ok()}, nil
}

func (f *fakeService) ExecuteStatement(_ context.Context, req *tcliservice.TExecuteStatementReq) (*tcliservice.TExecuteStatementResp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.sessions[string(req.SessionHandle.SessionId.GUID)] {
		return &tcliservice.TExecuteStatementResp{Status: invalidHandle("session")}, nil
	}
	guid, secret := f.newID()
	op := &fakeOp{session: string(req.SessionHandle.SessionId.GUID), secret: secret,
		state: tcliservice.TOperationState_RUNNING_STATE, started: 1_700_000_000_000}
	sql := strings.TrimSpace(req.Statement)
	switch {
	case strings.HasPrefix(sql, "SELECT id FROM range("):
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(sql, "SELECT id FROM range("), ")"), 10, 64)
		if err != nil {
			msg := "cannot parse " + sql
			return &tcliservice.TExecuteStatementResp{Status: &tcliservice.TStatus{
				StatusCode: tcliservice.TStatusCode_ERROR_STATUS, ErrorMessage: &msg, SqlState: ptr("42000")}}, nil
		}
		op.rows = n
	case sql == "FAIL":
		op.failMsg = "Query has been timed out due to inactivity."
	default:
		op.rows = 1
	}
	f.ops[string(guid)] = op
	h := &tcliservice.TOperationHandle{
		OperationId:   &tcliservice.THandleIdentifier{GUID: guid, Secret: secret},
		OperationType: tcliservice.TOperationType_EXECUTE_STATEMENT,
		HasResultSet:  true,
	}
	resp := &tcliservice.TExecuteStatementResp{Status: ok(), OperationHandle: h}
	if req.GetDirectResults != nil && op.failMsg == "" {
		// Answer everything inline and close, as Databricks does for fast queries.
		op.state = tcliservice.TOperationState_FINISHED_STATE
		st := f.statusLocked(op)
		page := f.pageLocked(op, req.GetDirectResults.MaxRows)
		resp.DirectResults = &tcliservice.TSparkDirectResults{
			OperationStatus:   st,
			ResultSetMetadata: &tcliservice.TGetResultSetMetadataResp{Status: ok(), Schema: schema()},
			ResultSet:         page,
			CloseOperation:    &tcliservice.TCloseOperationResp{Status: ok()},
		}
		delete(f.ops, string(guid))
	}
	return resp, nil
}

func ptr[T any](v T) *T { return &v }

// lookup finds an operation; the handle's secret must match, like Hive.
func (f *fakeService) lookup(h *tcliservice.TOperationHandle) *fakeOp {
	op := f.ops[string(h.OperationId.GUID)]
	if op == nil || string(op.secret) != string(h.OperationId.Secret) {
		return nil
	}
	return op
}

func (f *fakeService) statusLocked(op *fakeOp) *tcliservice.TGetOperationStatusResp {
	st := op.state
	r := &tcliservice.TGetOperationStatusResp{
		Status:                     ok(),
		OperationState:             &st,
		OperationStarted:           ptr(op.started),
		DbxtopClientLastActivityMs: ptr(f.lastActivity),
		DbxtopOpen:                 ptr(true),
	}
	if op.complete > 0 {
		r.OperationCompleted = ptr(op.complete)
	}
	if op.failMsg != "" && st == tcliservice.TOperationState_ERROR_STATE {
		r.ErrorMessage = ptr("org.apache.spark.SparkException: " + op.failMsg + "\n\tat ...")
		r.DisplayMessage = ptr(op.failMsg)
		r.SqlState = ptr("HYT00")
	}
	return r
}

func (f *fakeService) GetOperationStatus(_ context.Context, req *tcliservice.TGetOperationStatusReq) (*tcliservice.TGetOperationStatusResp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := f.lookup(req.OperationHandle)
	if op == nil {
		return &tcliservice.TGetOperationStatusResp{Status: invalidHandle(StatementID(req.OperationHandle.OperationId.GUID))}, nil
	}
	op.polls++
	if op.state == tcliservice.TOperationState_RUNNING_STATE && op.polls >= f.pollsToFinish {
		op.complete = op.started + 1500
		op.state = tcliservice.TOperationState_FINISHED_STATE
		if op.failMsg != "" {
			op.state = tcliservice.TOperationState_ERROR_STATE
		}
	}
	return f.statusLocked(op), nil
}

func (f *fakeService) CancelOperation(_ context.Context, req *tcliservice.TCancelOperationReq) (*tcliservice.TCancelOperationResp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := f.lookup(req.OperationHandle)
	if op == nil {
		return &tcliservice.TCancelOperationResp{Status: invalidHandle("operation")}, nil
	}
	if !tcliserviceTerminal(op.state) {
		op.state = tcliservice.TOperationState_CANCELED_STATE
	}
	return &tcliservice.TCancelOperationResp{Status: ok()}, nil
}

func tcliserviceTerminal(s tcliservice.TOperationState) bool {
	return s != tcliservice.TOperationState_RUNNING_STATE && s != tcliservice.TOperationState_PENDING_STATE &&
		s != tcliservice.TOperationState_INITIALIZED_STATE
}

func (f *fakeService) CloseOperation(_ context.Context, req *tcliservice.TCloseOperationReq) (*tcliservice.TCloseOperationResp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lookup(req.OperationHandle) == nil {
		return &tcliservice.TCloseOperationResp{Status: invalidHandle("operation")}, nil
	}
	delete(f.ops, string(req.OperationHandle.OperationId.GUID))
	return &tcliservice.TCloseOperationResp{Status: ok()}, nil
}

func schema() *tcliservice.TTableSchema {
	col := func(name string, pos int32, t tcliservice.TTypeId) *tcliservice.TColumnDesc {
		return &tcliservice.TColumnDesc{ColumnName: name, Position: pos, TypeDesc: &tcliservice.TTypeDesc{
			Types: []*tcliservice.TTypeEntry{{PrimitiveEntry: &tcliservice.TPrimitiveTypeEntry{Type: t}}}}}
	}
	return &tcliservice.TTableSchema{Columns: []*tcliservice.TColumnDesc{
		col("id", 1, tcliservice.TTypeId_BIGINT_TYPE),
		col("label", 2, tcliservice.TTypeId_STRING_TYPE),
	}}
}

func (f *fakeService) GetResultSetMetadata(_ context.Context, req *tcliservice.TGetResultSetMetadataReq) (*tcliservice.TGetResultSetMetadataResp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lookup(req.OperationHandle) == nil {
		return &tcliservice.TGetResultSetMetadataResp{Status: invalidHandle("operation")}, nil
	}
	return &tcliservice.TGetResultSetMetadataResp{Status: ok(), Schema: schema(),
		ResultFormat: ptr(tcliservice.TSparkRowSetType_COLUMN_BASED_SET)}, nil
}

// pageLocked returns rows [cursor, cursor+max): id, and a label that is
// NULL on every third row.
func (f *fakeService) pageLocked(op *fakeOp, max int64) *tcliservice.TFetchResultsResp {
	start := op.cursor
	end := min(start+max, op.rows)
	ids := &tcliservice.TI64Column{Values: []int64{}, Nulls: []byte{}}
	labels := &tcliservice.TStringColumn{Values: []string{}, Nulls: make([]byte, (end-start+7)/8)}
	for i := start; i < end; i++ {
		ids.Values = append(ids.Values, i)
		k := i - start
		if i%3 == 2 {
			labels.Values = append(labels.Values, "")
			labels.Nulls[k/8] |= 1 << (k % 8)
		} else {
			labels.Values = append(labels.Values, fmt.Sprintf("row-%d", i))
		}
	}
	op.cursor = end
	return &tcliservice.TFetchResultsResp{
		Status:      ok(),
		HasMoreRows: ptr(end < op.rows),
		Results: &tcliservice.TRowSet{StartRowOffset: start, Rows: []*tcliservice.TRow{},
			Columns: []*tcliservice.TColumn{{I64Val: ids}, {StringVal: labels}}},
	}
}

func (f *fakeService) FetchResults(_ context.Context, req *tcliservice.TFetchResultsReq) (*tcliservice.TFetchResultsResp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := f.lookup(req.OperationHandle)
	if op == nil {
		return &tcliservice.TFetchResultsResp{Status: invalidHandle("operation")}, nil
	}
	if op.state != tcliservice.TOperationState_FINISHED_STATE {
		return nil, errors.New("fetch before FINISHED")
	}
	if req.Orientation == tcliservice.TFetchOrientation_FETCH_FIRST {
		op.cursor = 0
	}
	return f.pageLocked(op, req.MaxRows), nil
}

// recorder notes what reached the server, behind the TCLIService handler.
type recorder struct {
	mu     sync.Mutex
	calls  []string
	agents []string
	auths  []string
	ctypes []string
}

func (r *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name, err := PeekRequestCallName(req)
		r.mu.Lock()
		if err != nil {
			name = "?" + err.Error()
		}
		r.calls = append(r.calls, name)
		r.agents = append(r.agents, req.Header.Get("User-Agent"))
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		r.ctypes = append(r.ctypes, req.Header.Get("Content-Type"))
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

func (r *recorder) snapshot() (calls, agents, auths, ctypes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...), append([]string(nil), r.agents...),
		append([]string(nil), r.auths...), append([]string(nil), r.ctypes...)
}

const testToken = "dapi0123456789abcdef0123456789abcdef"

// newTestServer serves f on loopback at the warehouse path of "wh1".
func newTestServer(t *testing.T, f *fakeService) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	mux := http.NewServeMux()
	mux.Handle("/sql/1.0/warehouses/wh1", rec.wrap(NewHandler(f)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, rec
}

// newTestClient builds a client for url; its idle connections are closed at
// cleanup so goleak sees no transport goroutines.
func newTestClient(t *testing.T, url string, mod ...func(*Options)) *Client {
	t.Helper()
	o := Options{Host: url, Token: testToken, UserAgent: "dbxtop/test"}
	for _, m := range mod {
		m(&o)
	}
	c, err := NewClient(o)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}
