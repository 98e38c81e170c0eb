package thrift

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// ClientProtocol is what OpenSession announces: HiveServer2 V10 in the
// classic field (column-based results on Hive, Spark Thrift Server,
// Kyuubi) and SPARK_V8 in client_protocol_i64, which Databricks reads.
const (
	ClientProtocol    = tcliservice.TProtocolVersion_HIVE_CLI_SERVICE_PROTOCOL_V10
	ClientProtocolI64 = int64(tcliservice.TProtocolVersion_SPARK_CLI_SERVICE_PROTOCOL_V8)
)

// DirectResultsMaxRows is the row budget asked for with direct results.
const DirectResultsMaxRows = 10000

// Session is an open TCLIService session on one warehouse.
type Session struct {
	WarehouseID    string
	Handle         *tcliservice.TSessionHandle
	ServerProtocol tcliservice.TProtocolVersion
}

// ID is the session GUID as a UUID.
func (s Session) ID() string {
	if s.Handle == nil || s.Handle.SessionId == nil {
		return ""
	}
	return StatementID(s.Handle.SessionId.GUID)
}

// Operation is a statement started by Execute.
type Operation struct {
	Ref          sources.Ref // statement id, warehouse and secret: enough to poll, cancel, close
	Handle       *tcliservice.TOperationHandle
	HasResultSet bool
	// Direct holds what the server returned inline when direct results
	// were asked for and given; nil otherwise.
	Direct *DirectResults
}

// DirectResults is what ExecuteStatement answered inline.
type DirectResults struct {
	Status  *sources.Status // nil when the server sent no status
	Columns []Column
	Page    *Page
	// Closed is true when the server closed the operation already; no
	// CloseOperation is needed then.
	Closed bool
}

// OpenSession opens a session on a warehouse.
func (c *Client) OpenSession(ctx context.Context, warehouseID string) (Session, error) {
	const call = "OpenSession"
	proto := ClientProtocol
	i64 := ClientProtocolI64
	req := &tcliservice.TOpenSessionReq{ClientProtocol: proto, ClientProtocolI64: &i64}
	res := &tcliservice.TCLIServiceOpenSessionResult{}
	if err := c.call(ctx, warehouseID, call, &tcliservice.TCLIServiceOpenSessionArgs{Req: req}, res); err != nil {
		return Session{}, err
	}
	r := res.Success
	if r == nil {
		return Session{}, &DecodeError{Call: call, Err: fmt.Errorf("reply without result")}
	}
	if err := checkStatus(call, "warehouse "+warehouseID, r.Status); err != nil {
		return Session{}, err
	}
	if r.SessionHandle == nil || r.SessionHandle.SessionId == nil {
		return Session{}, &DecodeError{Call: call, Err: fmt.Errorf("success without a session handle")}
	}
	return Session{WarehouseID: warehouseID, Handle: r.SessionHandle, ServerProtocol: r.ServerProtocolVersion}, nil
}

// CloseSession closes a session (and, on the server, its operations).
func (c *Client) CloseSession(ctx context.Context, s Session) error {
	const call = "CloseSession"
	if s.Handle == nil {
		return fmt.Errorf("thrift %s: session has no handle", call)
	}
	res := &tcliservice.TCLIServiceCloseSessionResult{}
	args := &tcliservice.TCLIServiceCloseSessionArgs{Req: &tcliservice.TCloseSessionReq{SessionHandle: s.Handle}}
	if err := c.call(ctx, s.WarehouseID, call, args, res); err != nil {
		return err
	}
	if res.Success == nil {
		return &DecodeError{Call: call, Err: fmt.Errorf("reply without result")}
	}
	return checkStatus(call, "session "+s.ID(), res.Success.Status)
}

// Execute starts sql asynchronously (runAsync). With directResults the
// server may answer the state, metadata and first page inline (and close
// the operation itself). ExecuteStatement is not safe to repeat: callers
// must not retry it after a transport error unless the request provably
// never left.
func (c *Client) Execute(ctx context.Context, s Session, sql string, directResults bool) (*Operation, error) {
	const call = "ExecuteStatement"
	if s.Handle == nil {
		return nil, fmt.Errorf("thrift %s: session has no handle", call)
	}
	req := &tcliservice.TExecuteStatementReq{SessionHandle: s.Handle, Statement: sql, RunAsync: true}
	if directResults {
		req.GetDirectResults = &tcliservice.TSparkGetDirectResults{MaxRows: DirectResultsMaxRows}
	}
	res := &tcliservice.TCLIServiceExecuteStatementResult{}
	if err := c.call(ctx, s.WarehouseID, call, &tcliservice.TCLIServiceExecuteStatementArgs{Req: req}, res); err != nil {
		return nil, err
	}
	r := res.Success
	if r == nil {
		return nil, &DecodeError{Call: call, Err: fmt.Errorf("reply without result")}
	}
	if err := checkStatus(call, "session "+s.ID(), r.Status); err != nil {
		return nil, err
	}
	h := r.OperationHandle
	if h == nil || h.OperationId == nil {
		return nil, &DecodeError{Call: call, Err: fmt.Errorf("success without an operation handle")}
	}
	op := &Operation{
		Ref: sources.Ref{
			StatementID: StatementID(h.OperationId.GUID),
			WarehouseID: s.WarehouseID,
			Secret:      h.OperationId.Secret,
		},
		Handle:       h,
		HasResultSet: h.HasResultSet,
	}
	if d := r.DirectResults; d != nil {
		dr := &DirectResults{}
		if d.OperationStatus != nil {
			if err := checkStatus(call, op.Ref.StatementID, d.OperationStatus.Status); err == nil {
				st := statusFromResp(d.OperationStatus)
				dr.Status = &st
			}
		}
		if d.ResultSetMetadata != nil {
			dr.Columns = decodeSchema(d.ResultSetMetadata.Schema)
		}
		if d.ResultSet != nil {
			if p, err := pageFromResp(d.ResultSet); err == nil {
				p.Columns = dr.Columns
				dr.Page = p
			} else {
				return op, &DecodeError{Call: call, Err: fmt.Errorf("direct results of %s: %w", op.Ref.StatementID, err)}
			}
		}
		dr.Closed = d.CloseOperation != nil && d.CloseOperation.Status != nil &&
			checkStatus(call, op.Ref.StatementID, d.CloseOperation.Status) == nil
		op.Direct = dr
	}
	return op, nil
}

// GetOperationStatus reports an operation's state. A handle the server no
// longer has yields an error wrapping sources.ErrHandleGone.
func (c *Client) GetOperationStatus(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	const call = "GetOperationStatus"
	h, err := OperationHandle(ref)
	if err != nil {
		return sources.Status{}, fmt.Errorf("thrift %s: %w", call, err)
	}
	res := &tcliservice.TCLIServiceGetOperationStatusResult{}
	args := &tcliservice.TCLIServiceGetOperationStatusArgs{Req: &tcliservice.TGetOperationStatusReq{OperationHandle: h}}
	if err := c.call(ctx, ref.WarehouseID, call, args, res); err != nil {
		return sources.Status{}, err
	}
	if res.Success == nil {
		return sources.Status{}, &DecodeError{Call: call, Err: fmt.Errorf("reply without result")}
	}
	if err := checkStatus(call, ref.StatementID, res.Success.Status); err != nil {
		return sources.Status{}, rebuilt(ref, err)
	}
	return statusFromResp(res.Success), nil
}

// statusFromResp converts a status answer. A missing operationState reads
// as UNKNOWN rather than INITIALIZED: guessing "pending" would keep an
// operation looking alive forever.
func statusFromResp(r *tcliservice.TGetOperationStatusResp) sources.Status {
	st := sources.Status{State: model.StateUnknown}
	if r.OperationState != nil {
		st.State = model.FromThrift(int32(*r.OperationState))
	}
	if ms := r.GetOperationStarted(); ms > 0 {
		st.StartedAt = time.UnixMilli(ms).UTC()
	}
	if ms := r.GetOperationCompleted(); ms > 0 {
		st.CompletedAt = time.UnixMilli(ms).UTC()
	}
	st.ErrorMessage = r.GetDisplayMessage()
	if st.ErrorMessage == "" {
		st.ErrorMessage = r.GetErrorMessage()
	}
	if r.DbxtopClientLastActivityMs != nil && *r.DbxtopClientLastActivityMs > 0 {
		t := time.UnixMilli(*r.DbxtopClientLastActivityMs).UTC()
		st.ClientLastActivity = &t
	}
	if r.DbxtopOpen != nil {
		open := *r.DbxtopOpen
		st.Open = &open
	} else if st.State != model.StateUnknown {
		// A real server answers a status call only for an operation it
		// still holds (a closed one is INVALID_HANDLE, or CLOSED): the
		// answer itself says whether it is open.
		open := st.State != model.StateClosed
		st.Open = &open
	}
	return st
}

// GetResultSetMetadata reads the result schema of a finished operation.
func (c *Client) GetResultSetMetadata(ctx context.Context, ref sources.Ref) ([]Column, error) {
	const call = "GetResultSetMetadata"
	h, err := OperationHandle(ref)
	if err != nil {
		return nil, fmt.Errorf("thrift %s: %w", call, err)
	}
	res := &tcliservice.TCLIServiceGetResultSetMetadataResult{}
	args := &tcliservice.TCLIServiceGetResultSetMetadataArgs{Req: &tcliservice.TGetResultSetMetadataReq{OperationHandle: h}}
	if err := c.call(ctx, ref.WarehouseID, call, args, res); err != nil {
		return nil, err
	}
	if res.Success == nil {
		return nil, &DecodeError{Call: call, Err: fmt.Errorf("reply without result")}
	}
	if err := checkStatus(call, ref.StatementID, res.Success.Status); err != nil {
		return nil, err
	}
	return decodeSchema(res.Success.Schema), nil
}

// FetchResults reads the next page of at most maxRows rows (FETCH_NEXT),
// column-based. A fetch past the end returns an empty page with
// HasMoreRows false.
func (c *Client) FetchResults(ctx context.Context, ref sources.Ref, maxRows int64) (*Page, error) {
	const call = "FetchResults"
	h, err := OperationHandle(ref)
	if err != nil {
		return nil, fmt.Errorf("thrift %s: %w", call, err)
	}
	if maxRows <= 0 {
		maxRows = DirectResultsMaxRows
	}
	req := &tcliservice.TFetchResultsReq{
		OperationHandle: h,
		Orientation:     tcliservice.TFetchOrientation_FETCH_NEXT,
		MaxRows:         maxRows,
	}
	res := &tcliservice.TCLIServiceFetchResultsResult{}
	if err := c.call(ctx, ref.WarehouseID, call, &tcliservice.TCLIServiceFetchResultsArgs{Req: req}, res); err != nil {
		return nil, err
	}
	if res.Success == nil {
		return nil, &DecodeError{Call: call, Err: fmt.Errorf("reply without result")}
	}
	if err := checkStatus(call, ref.StatementID, res.Success.Status); err != nil {
		return nil, err
	}
	p, err := pageFromResp(res.Success)
	if err != nil {
		return nil, &DecodeError{Call: call, Err: fmt.Errorf("rows of %s: %w", ref.StatementID, err)}
	}
	return p, nil
}

func pageFromResp(r *tcliservice.TFetchResultsResp) (*Page, error) {
	p := &Page{HasMoreRows: r.GetHasMoreRows()}
	if r.Results != nil {
		p.StartRowOffset = r.Results.StartRowOffset
		rows, err := decodeRowSet(r.Results)
		if err != nil {
			return nil, err
		}
		p.Rows = rows
	}
	if r.ResultSetMetadata != nil {
		p.Columns = decodeSchema(r.ResultSetMetadata.Schema)
	}
	return p, nil
}

// CancelOperation asks the server to stop an operation.
func (c *Client) CancelOperation(ctx context.Context, ref sources.Ref) error {
	const call = "CancelOperation"
	h, err := OperationHandle(ref)
	if err != nil {
		return fmt.Errorf("thrift %s: %w", call, err)
	}
	res := &tcliservice.TCLIServiceCancelOperationResult{}
	args := &tcliservice.TCLIServiceCancelOperationArgs{Req: &tcliservice.TCancelOperationReq{OperationHandle: h}}
	if err := c.call(ctx, ref.WarehouseID, call, args, res); err != nil {
		return err
	}
	if res.Success == nil {
		return &DecodeError{Call: call, Err: fmt.Errorf("reply without result")}
	}
	return rebuilt(ref, checkStatus(call, ref.StatementID, res.Success.Status))
}

// CloseOperation releases an operation on the server. An error wrapping
// sources.ErrHandleGone means it is already gone: closing is done.
func (c *Client) CloseOperation(ctx context.Context, ref sources.Ref) error {
	const call = "CloseOperation"
	h, err := OperationHandle(ref)
	if err != nil {
		return fmt.Errorf("thrift %s: %w", call, err)
	}
	res := &tcliservice.TCLIServiceCloseOperationResult{}
	args := &tcliservice.TCLIServiceCloseOperationArgs{Req: &tcliservice.TCloseOperationReq{OperationHandle: h}}
	if err := c.call(ctx, ref.WarehouseID, call, args, res); err != nil {
		return err
	}
	if res.Success == nil {
		return &DecodeError{Call: call, Err: fmt.Errorf("reply without result")}
	}
	return rebuilt(ref, checkStatus(call, ref.StatementID, res.Success.Status))
}

// rebuilt marks an INVALID_HANDLE answer to a handle rebuilt without its
// secret (ref.Secret empty) as unverified: it still matches
// sources.ErrHandleGone (what a server that looks handles up by GUID
// means), and also sources.ErrHandleUnverified, because a server that
// checks secrets refuses such a handle for a live operation too. The
// poller does not call the operation gone on that word alone.
func rebuilt(ref sources.Ref, err error) error {
	if len(ref.Secret) == 0 && errors.Is(err, sources.ErrHandleGone) {
		return &unverifiedError{err: err}
	}
	return err
}

type unverifiedError struct{ err error }

func (e *unverifiedError) Error() string {
	return e.err.Error() + " (the handle was rebuilt without its secret, so this is not evidence that the operation is gone)"
}
func (e *unverifiedError) Unwrap() []error { return []error{e.err, sources.ErrHandleUnverified} }
