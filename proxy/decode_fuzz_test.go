package proxy

import (
	"context"
	"testing"
	"time"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

func encodeMessage(name string, typ athrift.TMessageType, s athrift.TStruct) []byte {
	buf := athrift.NewTMemoryBuffer()
	p := athrift.NewTBinaryProtocolConf(buf, nil)
	ctx := context.Background()
	_ = p.WriteMessageBegin(ctx, name, typ, 1)
	_ = s.Write(ctx, p)
	_ = p.WriteMessageEnd(ctx)
	return buf.Bytes()
}

// FuzzDecodeRequest: any client body decodes to what it says or to
// nothing, never a panic (the proxy forwards it untouched either way).
func FuzzDecodeRequest(f *testing.F) {
	for _, n := range followedCalls {
		f.Add(emptyArgs(n))
	}
	h := &tc.TOperationHandle{OperationId: &tc.THandleIdentifier{GUID: make([]byte, 16), Secret: make([]byte, 16)}}
	f.Add(encodeFetch(h))
	f.Add(encodeMessage("GetOperationStatus", athrift.CALL, &tc.TCLIServiceGetOperationStatusArgs{Req: &tc.TGetOperationStatusReq{}}))
	f.Add(encodeMessage("CloseOperation", athrift.CALL, &tc.TCLIServiceCloseOperationArgs{Req: &tc.TCloseOperationReq{OperationHandle: &tc.TOperationHandle{}}}))
	f.Add(encodeMessage("ExecuteStatement", athrift.CALL, &tc.TCLIServiceExecuteStatementArgs{Req: &tc.TExecuteStatementReq{SessionHandle: &tc.TSessionHandle{}}}))
	f.Add([]byte("\x00\x01garbage"))
	f.Add(encodeMetadata("GetTables", athrift.CALL, &tc.TSessionHandle{SessionId: h.OperationId}, nil, nil))
	f.Add(emptyArgs("GetColumns"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := decodeRequest(body)
		if r.decoded && r.call != "OpenSession" && r.opID == "" && r.sessionID == "" {
			t.Fatalf("decoded %s without its handle", r.call)
		}
	})
}

// FuzzDecodeReply: any answer (or a prefix of one) decodes to what it
// says or to nothing, never a panic.
func FuzzDecodeReply(f *testing.F) {
	for _, n := range followedCalls {
		f.Add(n, emptyArgs(n))
	}
	st := tc.TOperationStatePtr(tc.TOperationState_RUNNING_STATE)
	f.Add("GetOperationStatus", encodeMessage("GetOperationStatus", athrift.REPLY, &tc.TCLIServiceGetOperationStatusResult{
		Success: &tc.TGetOperationStatusResp{Status: &tc.TStatus{}, OperationState: st}}))
	f.Add("ExecuteStatement", encodeMessage("ExecuteStatement", athrift.REPLY, &tc.TCLIServiceExecuteStatementResult{
		Success: &tc.TExecuteStatementResp{Status: &tc.TStatus{}, DirectResults: &tc.TSparkDirectResults{
			OperationStatus: &tc.TGetOperationStatusResp{}, ResultSet: &tc.TFetchResultsResp{}, CloseOperation: &tc.TCloseOperationResp{}}}}))
	f.Add("FetchResults", encodeMessage("FetchResults", athrift.REPLY, &tc.TCLIServiceFetchResultsResult{Success: &tc.TFetchResultsResp{}}))
	f.Add("GetTables", encodeMetadata("GetTables", athrift.REPLY, nil, &tc.TStatus{}, &tc.TOperationHandle{OperationId: &tc.THandleIdentifier{GUID: make([]byte, 16)}}))
	f.Add("CloseOperation", encodeMessage("CloseOperation", athrift.EXCEPTION, athrift.NewTApplicationException(athrift.INTERNAL_ERROR, "x")))
	f.Fuzz(func(t *testing.T, call string, body []byte) {
		r := decodeReply(call, body)
		_ = r.statusErr(call)
		_ = success(r, call)
	})
}

// The proxy's store under any sequence of answers keeps its invariants
// (a reply decoded from fuzzed input drives the real observation code).
func TestObserveReplyKeepsStoreInvariants(t *testing.T) {
	p, err := New(Options{Upstream: "http://127.0.0.1:1", MaxOperations: 3, RetainFinished: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
	for i := 0; i < 10; i++ {
		id := randomStatementID()
		rq := p.st.id.withAuth(request{call: "GetOperationStatus", opID: id, secret: randomSecret()}, "Bearer x")
		running := model.StateRunning
		p.observeReply(rq, tracked{}, reply{ok: true, status: ok, state: &running}, true)
		if i%2 == 0 {
			rq.call = "CloseOperation"
			p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
		}
	}
	st := p.Stats()
	if st.Operations > 3 || st.OpenOperations > st.Operations || st.NotRecorded == 0 {
		t.Fatalf("stats %+v: want at most 3 held, the rest not recorded", st)
	}
	var doc []sources.ProxyOperation = p.st.snapshot()
	for _, f := range doc {
		if !f.LearnedAfterStart {
			t.Errorf("%s not marked learned after start", f.StatementID)
		}
	}
}
