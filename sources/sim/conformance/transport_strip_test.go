package conformance

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

// encodeExecute writes an ExecuteStatement call the way the driver does,
// with or without getDirectResults.
func encodeExecute(t testing.TB, name string, withDirect bool) []byte {
	t.Helper()
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, &thrift.TConfiguration{})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.WriteMessageBegin(ctx, name, thrift.CALL, 3))
	must(p.WriteStructBegin(ctx, "args"))
	must(p.WriteFieldBegin(ctx, "req", thrift.STRUCT, 1))
	must(p.WriteStructBegin(ctx, "TExecuteStatementReq"))
	// 1 sessionHandle{1 sessionId{1 guid, 2 secret}}
	must(p.WriteFieldBegin(ctx, "", thrift.STRUCT, 1))
	must(p.WriteStructBegin(ctx, ""))
	must(p.WriteFieldBegin(ctx, "", thrift.STRUCT, 1))
	must(p.WriteStructBegin(ctx, ""))
	must(p.WriteFieldBegin(ctx, "", thrift.STRING, 1))
	must(p.WriteBinary(ctx, bytes.Repeat([]byte{0xab}, 16)))
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldBegin(ctx, "", thrift.STRING, 2))
	must(p.WriteBinary(ctx, bytes.Repeat([]byte{0xcd}, 16)))
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldStop(ctx))
	must(p.WriteStructEnd(ctx))
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldStop(ctx))
	must(p.WriteStructEnd(ctx))
	must(p.WriteFieldEnd(ctx))
	// 2 statement
	must(p.WriteFieldBegin(ctx, "", thrift.STRING, 2))
	must(p.WriteString(ctx, "SELECT id FROM range(1000)"))
	must(p.WriteFieldEnd(ctx))
	// 3 confOverlay map
	must(p.WriteFieldBegin(ctx, "", thrift.MAP, 3))
	must(p.WriteMapBegin(ctx, thrift.STRING, thrift.STRING, 1))
	must(p.WriteString(ctx, "k"))
	must(p.WriteString(ctx, "v"))
	must(p.WriteMapEnd(ctx))
	must(p.WriteFieldEnd(ctx))
	// 4 runAsync
	must(p.WriteFieldBegin(ctx, "", thrift.BOOL, 4))
	must(p.WriteBool(ctx, true))
	must(p.WriteFieldEnd(ctx))
	if withDirect {
		must(p.WriteFieldBegin(ctx, "", thrift.STRUCT, 1281))
		must(p.WriteStructBegin(ctx, ""))
		must(p.WriteFieldBegin(ctx, "", thrift.I64, 1))
		must(p.WriteI64(ctx, 100000))
		must(p.WriteFieldEnd(ctx))
		must(p.WriteFieldStop(ctx))
		must(p.WriteStructEnd(ctx))
		must(p.WriteFieldEnd(ctx))
	}
	// 1282 canReadArrowResult, 1288 parameters (empty list)
	must(p.WriteFieldBegin(ctx, "", thrift.BOOL, 1282))
	must(p.WriteBool(ctx, true))
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldBegin(ctx, "", thrift.LIST, 1288))
	must(p.WriteListBegin(ctx, thrift.STRUCT, 0))
	must(p.WriteListEnd(ctx))
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldStop(ctx))
	must(p.WriteStructEnd(ctx))
	must(p.WriteFieldEnd(ctx))
	must(p.WriteFieldStop(ctx))
	must(p.WriteStructEnd(ctx))
	must(p.WriteMessageEnd(ctx))
	must(p.Flush(ctx))
	return append([]byte(nil), buf.Bytes()...)
}

func TestStripDirectResults(t *testing.T) {
	with := encodeExecute(t, "ExecuteStatement", true)
	without := encodeExecute(t, "ExecuteStatement", false)

	got, changed, err := stripDirectResults(with)
	if err != nil {
		t.Fatalf("strip: %v", err)
	}
	if !changed || !bytes.Equal(got, without) {
		t.Fatalf("strip: changed=%v, output differs from the request encoded without field 1281\n got %x\nwant %x", changed, got, without)
	}

	got, changed, err = stripDirectResults(without)
	if err != nil || changed || !bytes.Equal(got, without) {
		t.Fatalf("request without 1281: changed=%v err=%v, want it unchanged", changed, err)
	}

	// Other calls pass untouched, even with a field numbered 1281 inside.
	other := encodeExecute(t, "GetOperationStatus", true)
	got, changed, err = stripDirectResults(other)
	if err != nil || changed || !bytes.Equal(got, other) {
		t.Fatalf("other call: changed=%v err=%v, want it unchanged", changed, err)
	}

	if _, _, err := stripDirectResults(with[:len(with)-5]); err == nil {
		t.Fatal("truncated ExecuteStatement: want an error")
	}
}

// FuzzStripDirectResults: the rewriter sees whatever bytes the driver
// sends; it must never panic, and whatever it accepts must re-encode into
// something it accepts again unchanged (idempotence).
func FuzzStripDirectResults(f *testing.F) {
	f.Add(encodeExecute(f, "ExecuteStatement", true))
	f.Add(encodeExecute(f, "ExecuteStatement", false))
	f.Add(encodeExecute(f, "FetchResults", true))
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10})
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, err := stripDirectResults(body)
		if err != nil {
			return
		}
		again, changed, err := stripDirectResults(out)
		if err != nil {
			t.Fatalf("re-strip of accepted output failed: %v", err)
		}
		if changed || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: changed=%v", changed)
		}
	})
}
