package sim

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// thriftService implements TCLIService over the store. Operations are found
// by GUID and secret, as HiveServer2 does; Options.LenientHandles drops the
// secret check (observers such as dbxtop rebuild handles from statement ids
// and never learn the secret).
type thriftService struct{ s *Server }

// opHandle is opGUID plus, unless lenient, the secret check: a handle
// whose secret does not match is unknown (INVALID_HANDLE), as a server
// that checks secrets answers.
func (t *thriftService) opHandle(h *tc.TOperationHandle) (guid, bool) {
	g, ok := opGUID(h)
	if !ok || t.s.o.LenientHandles {
		return g, ok
	}
	return g, t.s.store.secretMatches(g, h.OperationId.Secret)
}

// Configuration keys the simulated clients use to describe themselves and
// to choose how long their statements run. Any client may set them.
const (
	confUser  = "sim.user"
	confApp   = "sim.application"
	confRunMS = "sim.run_ms"
	confFail  = "sim.fail"
	confRows  = "sim.rows"
)

// Defaults for statements without a defined result.
const (
	defaultRun  = 3 * time.Second
	defaultRows = 10
)

func okStatus() *tc.TStatus { return &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS} }

func invalidHandle(what string) *tc.TStatus {
	msg := "Invalid " + what + " handle: it was closed, reaped, or never existed."
	return &tc.TStatus{StatusCode: tc.TStatusCode_INVALID_HANDLE_STATUS, ErrorMessage: &msg, SqlState: strPtr("HY000")}
}

func errStatus(sqlState, msg string) *tc.TStatus {
	return &tc.TStatus{StatusCode: tc.TStatusCode_ERROR_STATUS, ErrorMessage: &msg, DisplayMessage: &msg, SqlState: &sqlState}
}

func strPtr(s string) *string { return &s }
func i64Ptr(v int64) *int64   { return &v }
func boolPtr(b bool) *bool    { return &b }

func toGUID(b []byte) (guid, bool) {
	var g guid
	if len(b) != len(g) {
		return g, false
	}
	copy(g[:], b)
	return g, true
}

func opGUID(h *tc.TOperationHandle) (guid, bool) {
	if h == nil || h.OperationId == nil {
		return guid{}, false
	}
	return toGUID(h.OperationId.GUID)
}

func sessGUID(h *tc.TSessionHandle) (guid, bool) {
	if h == nil || h.SessionId == nil {
		return guid{}, false
	}
	return toGUID(h.SessionId.GUID)
}

// sessHandle is sessGUID plus the secret check, on every session call: a
// session handle whose secret does not match is unknown (INVALID_HANDLE),
// so a GUID alone (read from a log, an operation id) cannot close a
// session or run a statement on it. LenientHandles covers operation
// handles only: nothing rebuilds a session handle.
func (t *thriftService) sessHandle(h *tc.TSessionHandle) (guid, bool) {
	g, ok := sessGUID(h)
	if !ok {
		return g, false
	}
	return g, t.s.store.sessionSecretMatches(g, h.SessionId.Secret)
}

// kindFromUA reads the simulated client kind from "simclient/1.0 (KIND)";
// every other client is "external".
func kindFromUA(ua string) string {
	if strings.HasPrefix(ua, "simclient/") {
		if i := strings.IndexByte(ua, '('); i >= 0 {
			if j := strings.IndexByte(ua[i:], ')'); j > 0 {
				switch k := ua[i+1 : i+j]; k {
				case KindHealthy, KindAbandons, KindCloseFails, KindIngest, KindGivesUp, KindCloseFailsProxied, KindLeaksProxied:
					return k
				}
			}
		}
	}
	return KindExternal
}

// errNoReq answers a call whose argument struct is empty: the generated
// processor turns it into a TApplicationException, as a Java Thrift
// server answers a missing required field, instead of dereferencing it.
var errNoReq = errors.New("required field 'req' is unset")

const maxProtocol = tc.TProtocolVersion_SPARK_CLI_SERVICE_PROTOCOL_V8

func (t *thriftService) OpenSession(ctx context.Context, req *tc.TOpenSessionReq) (*tc.TOpenSessionResp, error) {
	if req == nil {
		return nil, errNoReq
	}
	ci := callFrom(ctx)
	conf := req.GetConfiguration()
	user := conf[confUser]
	if user == "" {
		user = req.GetUsername()
	}
	if user == "" || user == "token" {
		user = "token-user@example.com"
	}
	app := conf[confApp]
	if app == "" {
		app = sources.ClientApplication(ci.ua)
	}
	ss := t.s.store.openSession(ci.warehouse, user, app, kindFromUA(ci.ua), !ci.observer)
	// Answer the client's version, capped at ours (SPARK_V8).
	v := maxProtocol
	if req.IsSetClientProtocolI64() {
		if p := tc.TProtocolVersion(req.GetClientProtocolI64()); p >= 0 && p < v {
			v = p
		}
	} else if p := req.GetClientProtocol(); p >= 0 && p < v {
		v = p
	}
	return &tc.TOpenSessionResp{
		Status:                okStatus(), // exactly SUCCESS: pools drop sessions opened WITH_INFO
		ServerProtocolVersion: v,
		SessionHandle:         &tc.TSessionHandle{SessionId: &tc.THandleIdentifier{GUID: ss.guid[:], Secret: ss.secret[:]}},
		Configuration:         map[string]string{},
	}, nil
}

func (t *thriftService) CloseSession(ctx context.Context, req *tc.TCloseSessionReq) (*tc.TCloseSessionResp, error) {
	if req == nil {
		return nil, errNoReq
	}
	ci := callFrom(ctx)
	g, ok := t.sessHandle(req.GetSessionHandle())
	if !ok || !t.s.store.closeSession(g, !ci.observer) {
		return &tc.TCloseSessionResp{Status: invalidHandle("session")}, nil
	}
	return &tc.TCloseSessionResp{Status: okStatus()}, nil
}

func (t *thriftService) ExecuteStatement(ctx context.Context, req *tc.TExecuteStatementReq) (*tc.TExecuteStatementResp, error) {
	if req == nil {
		return nil, errNoReq
	}
	ci := callFrom(ctx)
	g, ok := t.sessHandle(req.GetSessionHandle())
	ss, found := t.s.store.session(g)
	if !ok || !found {
		return &tc.TExecuteStatementResp{Status: invalidHandle("session")}, nil
	}
	conf := req.GetConfOverlay()
	run, rows := defaultRun, int64(defaultRows)
	if v, err := strconv.ParseInt(conf[confRunMS], 10, 64); err == nil && v >= 0 {
		run = time.Duration(v) * time.Millisecond
	}
	if v, err := strconv.ParseInt(conf[confRows], 10, 64); err == nil && v >= 0 && v <= maxRangeRows {
		rows = v
	}
	fail := conf[confFail]
	kind := kindFromUA(ci.ua)
	h, hinted := t.s.hints.pop(kind, req.GetStatement())
	if hinted {
		run, fail = h.run, h.fail
		if h.rows > 0 {
			rows = h.rows
		}
	}
	p := planStatement(req.GetStatement(), run, rows)
	p.failMsg = fail
	op := t.s.store.execute(ss, req.GetStatement(), p, !ci.observer, func(op *operation) {
		if hinted {
			if h.user != "" {
				op.user = h.user
			}
			if h.app != "" {
				op.app = h.app
			}
		}
	})
	resp := &tc.TExecuteStatementResp{
		Status: okStatus(),
		OperationHandle: &tc.TOperationHandle{
			OperationId:   &tc.THandleIdentifier{GUID: op.guid[:], Secret: op.secret[:]},
			OperationType: tc.TOperationType_EXECUTE_STATEMENT,
			HasResultSet:  true,
		},
	}
	if dr := req.GetGetDirectResults(); dr != nil {
		resp.DirectResults = t.directResults(op.guid, dr.GetMaxRows())
	}
	return resp, nil
}

// directResults answers ExecuteStatement's getDirectResults: the status,
// and when the statement already finished, its metadata, first page and,
// if that page holds every row, the close.
func (t *thriftService) directResults(g guid, maxRows int64) *tc.TSparkDirectResults {
	dr := &tc.TSparkDirectResults{}
	t.s.store.withOp(g, false, func(op *operation, now time.Time) {
		dr.OperationStatus = statusResp(op, t.s.o.OwnerActivity)
		if op.state != model.StateFinished {
			return
		}
		dr.ResultSetMetadata = metadataResp(op)
		fr := fetch(op, tc.TFetchOrientation_FETCH_NEXT, maxRows, false)
		dr.ResultSet = fr
		if !fr.GetHasMoreRows() {
			t.s.store.closeLocked(op, now)
			dr.CloseOperation = &tc.TCloseOperationResp{Status: okStatus()}
		}
	})
	return dr
}

var thriftStates = map[model.State]tc.TOperationState{
	model.StatePending:  tc.TOperationState_PENDING_STATE,
	model.StateRunning:  tc.TOperationState_RUNNING_STATE,
	model.StateFinished: tc.TOperationState_FINISHED_STATE,
	model.StateFailed:   tc.TOperationState_ERROR_STATE,
	model.StateCanceled: tc.TOperationState_CANCELED_STATE,
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// statusResp answers GetOperationStatus; the dbxtop extension fields
// (docs/thrift.md) only when ext (Options.OwnerActivity): a real server
// volunteers no owner activity.
func statusResp(op *operation, ext bool) *tc.TGetOperationStatusResp {
	r := &tc.TGetOperationStatusResp{
		Status:             okStatus(),
		OperationState:     tc.TOperationStatePtr(thriftStates[op.state]),
		OperationStarted:   i64Ptr(ms(op.created)),
		OperationCompleted: i64Ptr(ms(op.completed)),
		HasResultSet:       boolPtr(true),
	}
	if ext {
		r.DbxtopClientLastActivityMs = i64Ptr(ms(op.ownerLast()))
		r.DbxtopOpen = boolPtr(op.open)
	}
	if op.state == model.StateFailed || op.state == model.StateCanceled {
		msg := op.errMsg
		if msg == "" {
			msg = "Operation " + strings.ToLower(string(op.state))
		}
		r.ErrorMessage = &msg
		r.DisplayMessage = &msg
		r.SqlState = strPtr("HY000")
	}
	return r
}

func (t *thriftService) GetOperationStatus(ctx context.Context, req *tc.TGetOperationStatusReq) (*tc.TGetOperationStatusResp, error) {
	if req == nil {
		return nil, errNoReq
	}
	ci := callFrom(ctx)
	var resp *tc.TGetOperationStatusResp
	g, ok := t.opHandle(req.GetOperationHandle())
	if ok {
		t.s.store.withOp(g, !ci.observer, func(op *operation, _ time.Time) {
			if op.open {
				resp = statusResp(op, t.s.o.OwnerActivity)
			}
		})
	}
	if resp == nil {
		return &tc.TGetOperationStatusResp{Status: invalidHandle("operation"),
			OperationState: tc.TOperationStatePtr(tc.TOperationState_UKNOWN_STATE)}, nil
	}
	return resp, nil
}

func (t *thriftService) CancelOperation(ctx context.Context, req *tc.TCancelOperationReq) (*tc.TCancelOperationResp, error) {
	if req == nil {
		return nil, errNoReq
	}
	if !t.onOpenOp(ctx, req.GetOperationHandle(), t.s.store.cancelLocked) {
		return &tc.TCancelOperationResp{Status: invalidHandle("operation")}, nil
	}
	return &tc.TCancelOperationResp{Status: okStatus()}, nil
}

func (t *thriftService) CloseOperation(ctx context.Context, req *tc.TCloseOperationReq) (*tc.TCloseOperationResp, error) {
	if req == nil {
		return nil, errNoReq
	}
	if !t.onOpenOp(ctx, req.GetOperationHandle(), t.s.store.closeLocked) {
		return &tc.TCloseOperationResp{Status: invalidHandle("operation")}, nil
	}
	return &tc.TCloseOperationResp{Status: okStatus()}, nil
}

// onOpenOp applies f to the operation behind h if the server still holds
// it; false means the handle is unknown or already closed (INVALID_HANDLE).
// Only the owner's calls count as its activity.
func (t *thriftService) onOpenOp(ctx context.Context, h *tc.TOperationHandle, f func(*operation, time.Time)) bool {
	ci := callFrom(ctx)
	done := false
	if g, ok := t.opHandle(h); ok {
		t.s.store.withOp(g, !ci.observer, func(op *operation, now time.Time) {
			if op.open {
				f(op, now)
				done = true
			}
		})
	}
	return done
}

func columnType(p plan) tc.TTypeId {
	if p.kind == resultInt {
		return tc.TTypeId_INT_TYPE
	}
	return tc.TTypeId_BIGINT_TYPE
}

func metadataResp(op *operation) *tc.TGetResultSetMetadataResp {
	return &tc.TGetResultSetMetadataResp{
		Status: okStatus(),
		Schema: &tc.TTableSchema{Columns: []*tc.TColumnDesc{{
			ColumnName: op.plan.column,
			TypeDesc:   &tc.TTypeDesc{Types: []*tc.TTypeEntry{{PrimitiveEntry: &tc.TPrimitiveTypeEntry{Type: columnType(op.plan)}}}},
			Position:   1,
		}}},
		ResultFormat:  tc.TSparkRowSetTypePtr(tc.TSparkRowSetType_COLUMN_BASED_SET),
		Lz4Compressed: boolPtr(false),
	}
}

func (t *thriftService) GetResultSetMetadata(ctx context.Context, req *tc.TGetResultSetMetadataReq) (*tc.TGetResultSetMetadataResp, error) {
	if req == nil {
		return nil, errNoReq
	}
	ci := callFrom(ctx)
	var resp *tc.TGetResultSetMetadataResp
	if g, ok := t.opHandle(req.GetOperationHandle()); ok {
		t.s.store.withOp(g, !ci.observer, func(op *operation, _ time.Time) {
			if op.open {
				resp = metadataResp(op)
			}
		})
	}
	if resp == nil {
		return &tc.TGetResultSetMetadataResp{Status: invalidHandle("operation")}, nil
	}
	return resp, nil
}

// maxPage bounds one fetched page whatever the client asks.
const maxPage = 1_000_000

// fetch builds one page from the operation's cursor and moves the cursor.
func fetch(op *operation, orient tc.TFetchOrientation, maxRows int64, withMeta bool) *tc.TFetchResultsResp {
	if orient == tc.TFetchOrientation_FETCH_FIRST {
		op.fetchPos = 0
	}
	if maxRows <= 0 || maxRows > maxPage {
		maxRows = maxPage
	}
	pos, total := op.fetchPos, op.plan.rows
	n := total - pos
	if n < 0 {
		n = 0
	}
	if n > maxRows {
		n = maxRows
	}
	col := &tc.TColumn{}
	switch op.plan.kind {
	case resultInt:
		vals := make([]int32, n)
		for i := range vals {
			vals[i] = int32(op.plan.value)
		}
		col.I32Val = &tc.TI32Column{Values: vals, Nulls: []byte{}}
	case resultSleep:
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = op.plan.value
		}
		col.I64Val = &tc.TI64Column{Values: vals, Nulls: []byte{}}
	default:
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = pos + int64(i)
		}
		col.I64Val = &tc.TI64Column{Values: vals, Nulls: []byte{}}
	}
	op.fetchPos = pos + n
	r := &tc.TFetchResultsResp{
		Status:      okStatus(),
		HasMoreRows: boolPtr(op.fetchPos < total),
		Results: &tc.TRowSet{StartRowOffset: pos, Rows: []*tc.TRow{}, Columns: []*tc.TColumn{col},
			ColumnCount: func() *int32 { c := int32(1); return &c }()},
	}
	if withMeta {
		r.ResultSetMetadata = metadataResp(op)
	}
	return r
}

func (t *thriftService) FetchResults(ctx context.Context, req *tc.TFetchResultsReq) (*tc.TFetchResultsResp, error) {
	if req == nil {
		return nil, errNoReq
	}
	ci := callFrom(ctx)
	var resp *tc.TFetchResultsResp
	found := false
	if g, ok := t.opHandle(req.GetOperationHandle()); ok {
		t.s.store.withOp(g, !ci.observer, func(op *operation, _ time.Time) {
			if !op.open {
				return
			}
			found = true
			if req.GetFetchType() == 1 { // operation logs: none
				resp = &tc.TFetchResultsResp{Status: okStatus(), HasMoreRows: boolPtr(false),
					Results: &tc.TRowSet{StartRowOffset: 0, Rows: []*tc.TRow{}, Columns: []*tc.TColumn{}}}
				return
			}
			if op.state != model.StateFinished {
				resp = &tc.TFetchResultsResp{Status: errStatus("HY010",
					"Cannot fetch results: the operation is "+string(op.state)+", expected FINISHED.")}
				return
			}
			orient := req.GetOrientation()
			switch orient {
			case tc.TFetchOrientation_FETCH_NEXT, tc.TFetchOrientation_FETCH_FIRST:
			case tc.TFetchOrientation_FETCH_ABSOLUTE:
				if req.IsSetStartRowOffset() && req.GetStartRowOffset() >= 0 {
					op.fetchPos = req.GetStartRowOffset()
				}
			default:
				resp = &tc.TFetchResultsResp{Status: errStatus("HYC00",
					"Fetch orientation "+orient.String()+" is not supported; use FETCH_NEXT or FETCH_FIRST.")}
				return
			}
			resp = fetch(op, orient, req.GetMaxRows(), req.GetIncludeResultSetMetadata())
		})
	}
	if !found {
		return &tc.TFetchResultsResp{Status: invalidHandle("operation")}, nil
	}
	return resp, nil
}
