package proxy

import (
	"context"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// request is what the proxy learned from one client request body: the
// RPC name, and the session or operation it concerns. A body the proxy
// cannot decode leaves the fields empty and is forwarded untouched.
type request struct {
	call       string
	sessionID  string
	sessSecret []byte
	opID       string
	secret     []byte
	fetchNext  bool // FetchResults FETCH_NEXT: never repeated
	decoded    bool
	// Where it came from: the Thrift path, the client's User-Agent and its
	// Authorization header (held in memory only, never output).
	path, ua, auth string
	// owner is the client identity of auth (identity.sum), computed once
	// per request: the ledger compares it several times per statement.
	owner authSum
}

func handleID(h *tc.THandleIdentifier) (string, []byte) {
	if h == nil || len(h.GUID) != 16 {
		return "", nil
	}
	return thrift.StatementID(h.GUID), h.Secret
}

func opHandle(h *tc.TOperationHandle) (string, []byte) {
	if h == nil {
		return "", nil
	}
	return handleID(h.OperationId)
}

func sessHandle(h *tc.TSessionHandle) (string, []byte) {
	if h == nil {
		return "", nil
	}
	return handleID(h.SessionId)
}

// decodeRequest decodes the arguments of the RPCs the proxy follows, with
// the project's bounded protocol (a forged length cannot make it
// allocate). Other RPCs are known by name only.
func decodeRequest(body []byte) request {
	var r request
	name, err := thrift.PeekCallName(body)
	if err != nil {
		return r
	}
	r.call = name
	args := requestArgs(name)
	if args == nil {
		if metadataCalls[name] {
			r.readMetadataSession(body)
		}
		return r
	}
	ctx := context.Background()
	p := thrift.NewReadProtocol(body)
	if _, _, _, err := p.ReadMessageBegin(ctx); err != nil {
		return r
	}
	if err := args.Read(ctx, p); err != nil {
		return r
	}
	r.decoded = true
	r.handles(args)
	if name != "OpenSession" && r.opID == "" && r.sessionID == "" {
		// A followed call without the handle it needs (an empty argument
		// struct, a short GUID): forwarded untouched, counted undecodable.
		r.decoded = false
	}
	return r
}

// requestArgs is the argument struct of a call the proxy follows, nil
// for any other (metadata calls included: they are read by their session
// alone).
func requestArgs(name string) athrift.TStruct {
	switch name {
	case "OpenSession":
		return &tc.TCLIServiceOpenSessionArgs{}
	case "CloseSession":
		return &tc.TCLIServiceCloseSessionArgs{}
	case "ExecuteStatement":
		return &tc.TCLIServiceExecuteStatementArgs{}
	case "GetOperationStatus":
		return &tc.TCLIServiceGetOperationStatusArgs{}
	case "GetResultSetMetadata":
		return &tc.TCLIServiceGetResultSetMetadataArgs{}
	case "FetchResults":
		return &tc.TCLIServiceFetchResultsArgs{}
	case "CancelOperation":
		return &tc.TCLIServiceCancelOperationArgs{}
	case "CloseOperation":
		return &tc.TCLIServiceCloseOperationArgs{}
	}
	return nil
}

// readMetadataSession reads the session handle of a metadata call's request.
func (r *request) readMetadataSession(body []byte) {
	ctx := context.Background()
	p := thrift.NewReadProtocol(body)
	if _, _, _, err := p.ReadMessageBegin(ctx); err != nil {
		return
	}
	h, err := metadataSession(ctx, p)
	if err != nil {
		return
	}
	r.sessionID, r.sessSecret = sessHandle(h)
	r.decoded = r.sessionID != ""
}

// handles takes the session or operation handle out of decoded arguments.
// A request may carry an empty argument struct (no req at all): the
// generated getters of a nil req dereference it, so each is checked.
func (r *request) handles(args athrift.TStruct) {
	switch a := args.(type) {
	case *tc.TCLIServiceCloseSessionArgs:
		if a.Req != nil {
			r.sessionID, r.sessSecret = sessHandle(a.Req.SessionHandle)
		}
	case *tc.TCLIServiceExecuteStatementArgs:
		if a.Req != nil {
			r.sessionID, r.sessSecret = sessHandle(a.Req.SessionHandle)
		}
	case *tc.TCLIServiceGetOperationStatusArgs:
		if a.Req != nil {
			r.opID, r.secret = opHandle(a.Req.OperationHandle)
		}
	case *tc.TCLIServiceGetResultSetMetadataArgs:
		if a.Req != nil {
			r.opID, r.secret = opHandle(a.Req.OperationHandle)
		}
	case *tc.TCLIServiceFetchResultsArgs:
		if a.Req != nil {
			r.opID, r.secret = opHandle(a.Req.OperationHandle)
			r.fetchNext = a.Req.Orientation == tc.TFetchOrientation_FETCH_NEXT
		}
	case *tc.TCLIServiceCancelOperationArgs:
		if a.Req != nil {
			r.opID, r.secret = opHandle(a.Req.OperationHandle)
		}
	case *tc.TCLIServiceCloseOperationArgs:
		if a.Req != nil {
			r.opID, r.secret = opHandle(a.Req.OperationHandle)
		}
	}
}

// reply is what the proxy learned from an answer: the TStatus, and per
// call the handles and states it carries.
type reply struct {
	ok         bool // a REPLY with a status was read
	status     *tc.TStatus
	exception  string // a TApplicationException's text
	sessionID  string
	sessSecret []byte
	opID       string
	secret     []byte
	state      *model.State
	// moreRows: a FetchResults page (or direct results) said more rows
	// remain for the client to fetch.
	moreRows bool
	// directClosed: ExecuteStatement's direct results closed the operation.
	directClosed bool
	// why an answer was not read (its encoding), for the operation's
	// unobserved reason.
	why string
}

// statusErr turns a non-success TStatus into the error dbxtop's own
// client would return (ErrHandleGone for INVALID_HANDLE), nil otherwise.
func (r reply) statusErr(call string) error {
	if r.exception != "" {
		return &sources.ServerError{Call: call, StatusCode: int32(tc.TStatusCode_ERROR_STATUS), Message: clean(r.exception)}
	}
	if r.status == nil {
		return nil
	}
	switch r.status.StatusCode {
	case tc.TStatusCode_SUCCESS_STATUS, tc.TStatusCode_SUCCESS_WITH_INFO_STATUS, tc.TStatusCode_STILL_EXECUTING_STATUS:
		return nil
	case tc.TStatusCode_INVALID_HANDLE_STATUS:
		return sources.ErrHandleGone
	}
	msg := r.status.GetDisplayMessage()
	if msg == "" {
		msg = r.status.GetErrorMessage()
	}
	return &sources.ServerError{Call: call, StatusCode: int32(r.status.StatusCode), SQLState: r.status.GetSqlState(),
		ErrorCode: r.status.GetErrorCode(), Message: clean(msg)}
}

// decodeReply reads what it can of an answer to call from prefix, the
// first bytes of the body (all of it for small answers). Thrift writes
// fields in id order and the status comes first, so a prefix of a large
// FetchResults page still yields its status; a field cut off by the
// prefix is simply not learned.
func decodeReply(call string, prefix []byte) reply {
	var r reply
	ctx := context.Background()
	p := thrift.NewReadProtocol(prefix)
	name, typ, _, err := p.ReadMessageBegin(ctx)
	if err != nil || name != call {
		return r
	}
	if typ == athrift.EXCEPTION {
		x := athrift.NewTApplicationException(athrift.UNKNOWN_APPLICATION_EXCEPTION, "")
		if x.Read(ctx, p) == nil {
			r.exception = x.Error()
			r.ok = true
		}
		return r
	}
	if typ != athrift.REPLY {
		return r
	}
	// Read errors are ignored on purpose: the generated readers fill
	// fields as they go, and a truncated prefix leaves the later ones unset.
	if metadataCalls[call] {
		st, h := metadataResult(ctx, p)
		r.status = st
		r.opID, r.secret = opHandle(h)
	} else {
		r.readResult(ctx, p, call)
	}
	r.ok = r.status != nil
	return r
}

// readResult reads the result struct of a followed call: its status and
// whatever handle, state or row news it carries.
func (r *reply) readResult(ctx context.Context, p athrift.TProtocol, call string) {
	switch call {
	case "OpenSession":
		res := &tc.TCLIServiceOpenSessionResult{}
		_ = res.Read(ctx, p)
		if s := res.Success; s != nil {
			r.status = s.Status
			r.sessionID, r.sessSecret = sessHandle(s.SessionHandle)
		}
	case "CloseSession":
		res := &tc.TCLIServiceCloseSessionResult{}
		_ = res.Read(ctx, p)
		if s := res.Success; s != nil {
			r.status = s.Status
		}
	case "ExecuteStatement":
		res := &tc.TCLIServiceExecuteStatementResult{}
		_ = res.Read(ctx, p)
		if s := res.Success; s != nil {
			r.status = s.Status
			r.opID, r.secret = opHandle(s.OperationHandle)
			r.directResults(s.DirectResults)
		}
	case "GetOperationStatus":
		res := &tc.TCLIServiceGetOperationStatusResult{}
		_ = res.Read(ctx, p)
		if s := res.Success; s != nil {
			r.status = s.Status
			if s.OperationState != nil {
				v := model.FromThrift(int32(*s.OperationState))
				r.state = &v
			}
		}
	case "GetResultSetMetadata":
		res := &tc.TCLIServiceGetResultSetMetadataResult{}
		_ = res.Read(ctx, p)
		if s := res.Success; s != nil {
			r.status = s.Status
		}
	case "FetchResults":
		res := &tc.TCLIServiceFetchResultsResult{}
		_ = res.Read(ctx, p)
		if s := res.Success; s != nil {
			r.status = s.Status
			r.moreRows = s.GetHasMoreRows()
		}
	case "CancelOperation":
		res := &tc.TCLIServiceCancelOperationResult{}
		_ = res.Read(ctx, p)
		if s := res.Success; s != nil {
			r.status = s.Status
		}
	case "CloseOperation":
		res := &tc.TCLIServiceCloseOperationResult{}
		_ = res.Read(ctx, p)
		if s := res.Success; s != nil {
			r.status = s.Status
		}
	}
}

// directResults reads what ExecuteStatement's direct results say: the
// state, whether rows remain, and whether they closed the operation.
func (r *reply) directResults(d *tc.TSparkDirectResults) {
	if d == nil {
		return
	}
	if st := d.OperationStatus; st != nil && st.OperationState != nil {
		v := model.FromThrift(int32(*st.OperationState))
		r.state = &v
	}
	if rs := d.ResultSet; rs != nil && rs.HasMoreRows != nil {
		r.moreRows = *rs.HasMoreRows
	}
	if c := d.CloseOperation; c != nil && c.Status != nil &&
		(c.Status.StatusCode == tc.TStatusCode_SUCCESS_STATUS || c.Status.StatusCode == tc.TStatusCode_SUCCESS_WITH_INFO_STATUS) {
		r.directClosed = true
	}
}
