package proxy

import (
	"bytes"
	"context"
	"testing"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// encodeMetadata writes a metadata call (GetTables and the like, absent
// from the project's IDL) by its shape: CALL args {1: req {1: session,
// 2: an extra field}}, REPLY result {0: success {1: status, 2: handle,
// 3: an extra field}}.
func encodeMetadata(name string, typ athrift.TMessageType, sess *tc.TSessionHandle, st *tc.TStatus, h *tc.TOperationHandle) []byte {
	buf := athrift.NewTMemoryBuffer()
	p := athrift.NewTBinaryProtocolConf(buf, nil)
	ctx := context.Background()
	_ = p.WriteMessageBegin(ctx, name, typ, 7)
	_ = p.WriteStructBegin(ctx, "x")
	outer := int16(1)
	if typ == athrift.REPLY {
		outer = 0
	}
	_ = p.WriteFieldBegin(ctx, "f", athrift.STRUCT, outer)
	_ = p.WriteStructBegin(ctx, "y")
	if sess != nil {
		_ = p.WriteFieldBegin(ctx, "session", athrift.STRUCT, 1)
		_ = sess.Write(ctx, p)
		_ = p.WriteFieldEnd(ctx)
	}
	if st != nil {
		_ = p.WriteFieldBegin(ctx, "status", athrift.STRUCT, 1)
		_ = st.Write(ctx, p)
		_ = p.WriteFieldEnd(ctx)
		_ = p.WriteFieldBegin(ctx, "handle", athrift.STRUCT, 2)
		_ = h.Write(ctx, p)
		_ = p.WriteFieldEnd(ctx)
	}
	_ = p.WriteFieldBegin(ctx, "extra", athrift.STRING, 9)
	_ = p.WriteString(ctx, "tableName%")
	_ = p.WriteFieldEnd(ctx)
	_ = p.WriteFieldStop(ctx)
	_ = p.WriteStructEnd(ctx)
	_ = p.WriteFieldEnd(ctx)
	_ = p.WriteFieldStop(ctx)
	_ = p.WriteStructEnd(ctx)
	_ = p.WriteMessageEnd(ctx)
	return buf.Bytes()
}

// A metadata call's operation is recorded from its answer like an
// ExecuteStatement's: the handle, its secret and its session.
func TestMetadataCallsRecorded(t *testing.T) {
	guid := func(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }
	sess := &tc.TSessionHandle{SessionId: &tc.THandleIdentifier{GUID: guid(1), Secret: guid(2)}}
	h := &tc.TOperationHandle{OperationId: &tc.THandleIdentifier{GUID: guid(3), Secret: guid(4)}, OperationType: tc.TOperationType_GET_TABLES}
	rq := decodeRequest(encodeMetadata("GetTables", athrift.CALL, sess, nil, nil))
	if !rq.decoded || rq.sessionID != thrift.StatementID(guid(1)) || !bytes.Equal(rq.sessSecret, guid(2)) {
		t.Fatalf("request %+v", rq)
	}
	body := encodeMetadata("GetTables", athrift.REPLY, nil, &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}, h)
	r := decodeReply("GetTables", body)
	if !r.ok || r.opID != thrift.StatementID(guid(3)) || !bytes.Equal(r.secret, guid(4)) {
		t.Fatalf("reply %+v", r)
	}
	p, err := New(Options{Upstream: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	rq = p.st.id.withAuth(rq, "Bearer x")
	p.observeReply(rq, tracked{}, r, true)
	ops := p.st.snapshot()
	if len(ops) != 1 || ops[0].StatementID != r.opID || ops[0].SessionID != rq.sessionID {
		t.Fatalf("recorded %+v", ops)
	}
	// Refused: nothing recorded.
	bad := decodeReply("GetColumns", encodeMetadata("GetColumns", athrift.REPLY, nil, &tc.TStatus{StatusCode: tc.TStatusCode_ERROR_STATUS}, h))
	rq.call = "GetColumns"
	p.observeReply(rq, tracked{}, bad, true)
	if n := p.Stats().Operations; n != 1 {
		t.Errorf("%d operations after a refused metadata call", n)
	}
}
