package thrift

import (
	"context"
	"testing"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// encodeReply builds the REPLY message a server sends for call.
func encodeReply(t testing.TB, name string, result athrift.TStruct) []byte {
	t.Helper()
	buf := athrift.NewTMemoryBuffer()
	p := athrift.NewTBinaryProtocolConf(buf, thriftConf)
	ctx := context.Background()
	if err := p.WriteMessageBegin(ctx, name, athrift.REPLY, 1); err != nil {
		t.Fatal(err)
	}
	if err := result.Write(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMessageEnd(ctx); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// seedReplies are real answers of the fake server, encoded.
func seedReplies(t testing.TB) [][]byte {
	f := newFakeService()
	op := &fakeOp{state: tcliservice.TOperationState_FINISHED_STATE, rows: 5, started: 1, complete: 2}
	failed := &fakeOp{state: tcliservice.TOperationState_ERROR_STATE, failMsg: "Query has been timed out due to inactivity."}
	page := f.pageLocked(op, 5)
	page.ResultSetMetadata = &tcliservice.TGetResultSetMetadataResp{Status: ok(), Schema: schema()}
	msg := "no such operation"
	gone := &tcliservice.TGetOperationStatusResp{Status: &tcliservice.TStatus{
		StatusCode: tcliservice.TStatusCode_INVALID_HANDLE_STATUS, ErrorMessage: &msg}}
	allTypes := &tcliservice.TFetchResultsResp{Status: ok(), HasMoreRows: ptr(false), Results: &tcliservice.TRowSet{
		Rows: []*tcliservice.TRow{{ColVals: []*tcliservice.TColumnValue{{I32Val: &tcliservice.TI32Value{Value: ptr(int32(7))}}}}},
		Columns: []*tcliservice.TColumn{
			{BoolVal: &tcliservice.TBoolColumn{Values: []bool{true}, Nulls: []byte{0}}},
			{ByteVal: &tcliservice.TByteColumn{Values: []int8{-1}, Nulls: []byte{0}}},
			{I16Val: &tcliservice.TI16Column{Values: []int16{3}, Nulls: []byte{}}},
			{I32Val: &tcliservice.TI32Column{Values: []int32{4}, Nulls: []byte{}}},
			{DoubleVal: &tcliservice.TDoubleColumn{Values: []float64{0.5}, Nulls: []byte{1}}},
			{BinaryVal: &tcliservice.TBinaryColumn{Values: [][]byte{{1, 2}}, Nulls: []byte{}}},
		}}}
	return [][]byte{
		encodeReply(t, "GetOperationStatus", &tcliservice.TCLIServiceGetOperationStatusResult{Success: f.statusLocked(op)}),
		encodeReply(t, "GetOperationStatus", &tcliservice.TCLIServiceGetOperationStatusResult{Success: f.statusLocked(failed)}),
		encodeReply(t, "GetOperationStatus", &tcliservice.TCLIServiceGetOperationStatusResult{Success: gone}),
		encodeReply(t, "FetchResults", &tcliservice.TCLIServiceFetchResultsResult{Success: page}),
		encodeReply(t, "FetchResults", &tcliservice.TCLIServiceFetchResultsResult{Success: allTypes}),
	}
}

// FuzzDecodeResponse feeds arbitrary bytes to the decoding of the answers
// dbxtop reads most: GetOperationStatus and FetchResults replies, through
// the same code path as the client (readConf bounds allocations by the
// body length). It must never panic or allocate without bound.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range seedReplies(f) {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte("<html>502 Bad Gateway</html>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		st := &tcliservice.TCLIServiceGetOperationStatusResult{}
		if decodeReply(ctx, "GetOperationStatus", 1, body, st) == nil && st.Success != nil {
			if checkStatus("GetOperationStatus", "x", st.Success.Status) == nil {
				s := statusFromResp(st.Success)
				if s.State == "" {
					t.Fatal("empty state from a decoded status")
				}
			}
		}
		fr := &tcliservice.TCLIServiceFetchResultsResult{}
		if decodeReply(ctx, "FetchResults", 1, body, fr) == nil && fr.Success != nil {
			if p, err := pageFromResp(fr.Success); err == nil {
				for _, row := range p.Rows {
					if len(row) == 0 {
						t.Fatal("empty row")
					}
				}
			}
		}
		// The bare structs too, as they sit inside direct results.
		for _, s := range []athrift.TStruct{&tcliservice.TGetOperationStatusResp{}, &tcliservice.TFetchResultsResp{}} {
			_ = s.Read(ctx, NewReadProtocol(body))
		}
	})
}

// The committed seeds decode to what was encoded (so they exercise the
// success path, not only error paths).
func TestSeedRepliesDecode(t *testing.T) {
	seeds := seedReplies(t)
	st := &tcliservice.TCLIServiceGetOperationStatusResult{}
	if err := decodeReply(context.Background(), "GetOperationStatus", 1, seeds[0], st); err != nil {
		t.Fatal(err)
	}
	if s := statusFromResp(st.Success); s.State != "FINISHED" || s.ClientLastActivity == nil {
		t.Fatalf("%+v", s)
	}
	fr := &tcliservice.TCLIServiceFetchResultsResult{}
	if err := decodeReply(context.Background(), "FetchResults", 1, seeds[4], fr); err != nil {
		t.Fatal(err)
	}
	p, err := pageFromResp(fr.Success)
	if err != nil || len(p.Rows) != 1 || len(p.Rows[0]) != 6 || p.Rows[0][4] != nil || p.Rows[0][1] != int8(-1) {
		t.Fatalf("%+v %v", p, err)
	}
	// Wrong sequence id and wrong call name are decode errors, not successes.
	if err := decodeReply(context.Background(), "GetOperationStatus", 2, seeds[0], st); err == nil {
		t.Fatal("sequence id mismatch accepted")
	}
	if err := decodeReply(context.Background(), "FetchResults", 1, seeds[0], fr); err == nil {
		t.Fatal("reply for another call accepted")
	}
}

// FuzzPeekCallName: the simulator runs PeekCallName on every request body.
func FuzzPeekCallName(f *testing.F) {
	for _, s := range seedReplies(f) {
		f.Add(s)
	}
	f.Add([]byte{0, 0, 0, 4, 'a', 'b', 'c', 'd', 1, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, body []byte) {
		name, err := PeekCallName(body)
		if err == nil && (name == "" || len(name) > maxCallName) {
			t.Fatalf("accepted name %q", name)
		}
	})
}
