package thrift

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/dbxtop/dbxtop/sources"
)

func TestStatementID(t *testing.T) {
	guid := []byte{0x01, 0xef, 0x2a, 0x3b, 0x4c, 0x5d, 0x46, 0x7e, 0x8f, 0x90, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6}
	const want = "01ef2a3b-4c5d-467e-8f90-a1b2c3d4e5f6"
	if got := StatementID(guid); got != want {
		t.Fatalf("StatementID = %q, want %q", got, want)
	}
	for _, in := range []string{want, "01EF2A3B-4C5D-467E-8F90-A1B2C3D4E5F6", "01ef2a3b4c5d467e8f90a1b2c3d4e5f6"} {
		b, err := GUIDFromStatementID(in)
		if err != nil || !bytes.Equal(b, guid) {
			t.Fatalf("GUIDFromStatementID(%q) = %x, %v", in, b, err)
		}
	}
	for _, bad := range []string{"", "01ef2a3b-4c5d-467e-8f90", "01ef2a3b_4c5d_467e_8f90_a1b2c3d4e5f6", "zzef2a3b-4c5d-467e-8f90-a1b2c3d4e5f6"} {
		if _, err := GUIDFromStatementID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := StatementID([]byte{1, 2}); got != "0102" {
		t.Fatalf("short guid printed %q", got)
	}
}

func TestStatementIDRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		guid := rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "guid")
		back, err := GUIDFromStatementID(StatementID(guid))
		if err != nil || !bytes.Equal(back, guid) {
			t.Fatalf("round trip %x → %x, %v", guid, back, err)
		}
	})
}

func TestOperationHandleFromRef(t *testing.T) {
	id := "01ef2a3b-4c5d-467e-8f90-a1b2c3d4e5f6"
	h, err := OperationHandle(sources.Ref{StatementID: id})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.OperationId.Secret, make([]byte, 16)) || StatementID(h.OperationId.GUID) != id {
		t.Fatalf("handle %+v", h.OperationId)
	}
	secret := []byte("0123456789abcdef")
	h, _ = OperationHandle(sources.Ref{StatementID: id, Secret: secret})
	if !bytes.Equal(h.OperationId.Secret, secret) {
		t.Fatal("secret not used")
	}
	h.OperationId.Secret[0] = 'X'
	if secret[0] != '0' {
		t.Fatal("handle aliases the Ref's secret")
	}
}
