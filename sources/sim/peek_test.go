package sim

import (
	"context"
	"testing"

	athrift "github.com/apache/thrift/lib/go/thrift"

	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

func encodeCall(t testing.TB, name string, strict bool) []byte {
	buf := athrift.NewTMemoryBuffer()
	p := athrift.NewTBinaryProtocolConf(buf, &athrift.TConfiguration{TBinaryStrictWrite: &strict})
	ctx := context.Background()
	if err := p.WriteMessageBegin(ctx, name, athrift.CALL, 1); err != nil {
		t.Fatal(err)
	}
	args := &tc.TCLIServiceGetOperationStatusArgs{Req: &tc.TGetOperationStatusReq{}}
	if err := args.Write(ctx, p); err != nil {
		t.Fatal(err)
	}
	_ = p.WriteMessageEnd(ctx)
	_ = p.Flush(ctx)
	return buf.Bytes()
}

func TestPeekCallName(t *testing.T) {
	for _, strict := range []bool{true, false} {
		got, err := peekCallName(encodeCall(t, "GetOperationStatus", strict))
		if err != nil || got != "GetOperationStatus" {
			t.Errorf("strict=%v: got %q, %v", strict, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {0x80, 0x01, 0, 1, 0, 0, 0, 99}, {0x7f, 0, 0, 0}, {0x80, 0x02, 0, 1, 0, 0, 0, 1, 'a'},
		{0x80, 0x01, 0, 1, 0, 0, 0, 2, 'a', ' '}} {
		if name, err := peekCallName(bad); err == nil {
			t.Errorf("peekCallName(%x) = %q, want an error", bad, name)
		}
	}
}

func FuzzPeekCallName(f *testing.F) {
	f.Add(encodeCall(f, "OpenSession", true))
	f.Add(encodeCall(f, "FetchResults", false))
	f.Add([]byte{0x80, 0x01, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		name, err := peekCallName(b)
		if err != nil {
			return
		}
		if len(name) == 0 || len(name) > maxCallName {
			t.Fatalf("accepted name of length %d", len(name))
		}
	})
}
