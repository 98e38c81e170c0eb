package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// emptyArgs is a CALL of name whose argument struct is empty (no req):
// 31 bytes for GetOperationStatus, the probe that panicked servers.
func emptyArgs(name string) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(0x80010001))
	_ = binary.Write(&b, binary.BigEndian, uint32(len(name)))
	b.WriteString(name)
	_ = binary.Write(&b, binary.BigEndian, uint32(1))
	b.WriteByte(0) // STOP: the argument struct ends at once
	return b.Bytes()
}

// FuzzThriftServer feeds arbitrary bodies to the simulator's Thrift
// endpoint, with its real token: it answers (200 with a reply or an
// exception, or 400), never panics.
func FuzzThriftServer(f *testing.F) {
	s := startSim(f, Options{Logger: slog.New(slog.DiscardHandler)})
	path := thrift.DefaultHTTPPath(s.WarehouseIDs()[0])
	for _, n := range []string{"OpenSession", "CloseSession", "ExecuteStatement", "GetOperationStatus", "CancelOperation",
		"CloseOperation", "GetResultSetMetadata", "FetchResults", "GetInfo"} {
		f.Add(emptyArgs(n))
	}
	buf := athrift.NewTMemoryBuffer()
	p := athrift.NewTBinaryProtocolConf(buf, nil)
	ctx := context.Background()
	_ = p.WriteMessageBegin(ctx, "OpenSession", athrift.CALL, 1)
	_ = (&tc.TCLIServiceOpenSessionArgs{Req: &tc.TOpenSessionReq{}}).Write(ctx, p)
	_ = p.WriteMessageEnd(ctx)
	f.Add(buf.Bytes())
	f.Add([]byte("\x00\x01garbage"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		r = r.WithContext(context.WithValue(r.Context(), connKey{}, &connInfo{}))
		r.Header.Set("Authorization", "Bearer "+s.Token())
		r.Header.Set("Content-Type", thrift.ContentType)
		w := httptest.NewRecorder()
		s.routes().ServeHTTP(w, r)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest && w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}

// An OpenSession with an empty argument struct is answered with an
// exception, not a panic.
func TestOpenSessionEmptyArgs(t *testing.T) {
	s := startSim(t, Options{})
	req, _ := http.NewRequest(http.MethodPost, s.URL()+thrift.DefaultHTTPPath(s.WarehouseIDs()[0]), bytes.NewReader(emptyArgs("OpenSession")))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body.Bytes(), []byte("required field 'req' is unset")) {
		t.Fatalf("HTTP %d %q: want a TApplicationException naming the missing req", resp.StatusCode, body.Bytes())
	}
}

// HTTP Basic with user "token" and the token as password is accepted, as
// Databricks accepts a personal access token; another user or a wrong
// password is refused.
func TestBasicAuthWithTokenUser(t *testing.T) {
	s := startSim(t, Options{})
	path := s.URL() + thrift.DefaultHTTPPath(s.WarehouseIDs()[0])
	buf := athrift.NewTMemoryBuffer()
	p := athrift.NewTBinaryProtocolConf(buf, nil)
	ctx := context.Background()
	_ = p.WriteMessageBegin(ctx, "OpenSession", athrift.CALL, 1)
	_ = (&tc.TCLIServiceOpenSessionArgs{Req: &tc.TOpenSessionReq{}}).Write(ctx, p)
	_ = p.WriteMessageEnd(ctx)
	body := buf.Bytes()
	for _, tc := range []struct {
		user, pass string
		want       int
	}{
		{"token", s.Token(), http.StatusOK},
		{"admin", s.Token(), http.StatusUnauthorized},
		{"token", "wrong", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.SetBasicAuth(tc.user, tc.pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Basic %s:…: HTTP %d, want %d", tc.user, resp.StatusCode, tc.want)
		}
	}
}
