package thrift

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// encodeCall builds a TBinaryProtocol CALL message as a client sends it.
func encodeCall(t testing.TB, name string, args athrift.TStruct, strict bool) []byte {
	t.Helper()
	buf := athrift.NewTMemoryBuffer()
	p := athrift.NewTBinaryProtocolConf(buf, &athrift.TConfiguration{TBinaryStrictWrite: athrift.BoolPtr(strict)})
	if err := writeMessage(context.Background(), p, name, 1, args); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPeekCallName(t *testing.T) {
	args := &tcliservice.TCLIServiceGetOperationStatusArgs{Req: &tcliservice.TGetOperationStatusReq{
		OperationHandle: &tcliservice.TOperationHandle{OperationId: &tcliservice.THandleIdentifier{GUID: make([]byte, 16), Secret: make([]byte, 16)}}}}
	for _, strict := range []bool{true, false} {
		body := encodeCall(t, "GetOperationStatus", args, strict)
		before := append([]byte(nil), body...)
		name, err := PeekCallName(body)
		if err != nil || name != "GetOperationStatus" {
			t.Fatalf("strict=%v: %q, %v", strict, name, err)
		}
		if !bytes.Equal(body, before) {
			t.Fatal("PeekCallName modified the body")
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {0x80, 0x02, 0, 1, 0, 0, 0, 3, 'a'}, {0, 0, 0, 0}, {0x80, 0x01, 0, 1, 0x7f, 0, 0, 0}, {0, 0, 0, 2, 'a', '\n'}, []byte("<html>")} {
		if name, err := PeekCallName(bad); err == nil || !errors.Is(err, ErrNotThrift) {
			t.Errorf("%q: got %q, %v; want ErrNotThrift", bad, name, err)
		}
	}
}

func TestPeekRequestCallNameKeepsBody(t *testing.T) {
	body := encodeCall(t, "CloseOperation", &tcliservice.TCLIServiceCloseOperationArgs{Req: &tcliservice.TCloseOperationReq{
		OperationHandle: &tcliservice.TOperationHandle{OperationId: &tcliservice.THandleIdentifier{GUID: make([]byte, 16), Secret: make([]byte, 16)}}}}, true)
	r := httptest.NewRequest(http.MethodPost, "/sql/1.0/warehouses/wh1", bytes.NewReader(body))
	name, err := PeekRequestCallName(r)
	if err != nil || name != "CloseOperation" {
		t.Fatalf("%q %v", name, err)
	}
	again, _ := io.ReadAll(r.Body)
	if !bytes.Equal(again, body) {
		t.Fatal("body not restored for the next handler")
	}
	if _, err := PeekRequestCallName(httptest.NewRequest(http.MethodPost, "/", nil)); !errors.Is(err, ErrNotThrift) {
		t.Fatalf("empty body: %v", err)
	}
}

func TestHandlerRejects(t *testing.T) {
	h := NewHandler(newFakeService())
	tests := []struct {
		name   string
		method string
		body   string
		want   int
	}{
		{"GET", http.MethodGet, "", http.StatusMethodNotAllowed},
		{"garbage", http.MethodPost, "hello world", http.StatusBadRequest},
		{"empty", http.MethodPost, "", http.StatusBadRequest},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tt.method, "/", strings.NewReader(tt.body)))
		if w.Code != tt.want {
			t.Errorf("%s: %d, want %d (%s)", tt.name, w.Code, tt.want, w.Body)
		}
	}
}

func TestHandlerUnknownMethodIsThriftException(t *testing.T) {
	body := encodeCall(t, "GetCatalogs", &tcliservice.TCLIServiceCloseSessionArgs{Req: &tcliservice.TCloseSessionReq{
		SessionHandle: &tcliservice.TSessionHandle{SessionId: &tcliservice.THandleIdentifier{GUID: []byte{1}, Secret: []byte{2}}}}}, true)
	w := httptest.NewRecorder()
	NewHandler(newFakeService()).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
	if w.Code != 200 || w.Header().Get("Content-Type") != ContentType {
		t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
	}
	err := decodeReply(context.Background(), "GetCatalogs", 1, w.Body.Bytes(), &tcliservice.TCLIServiceCloseSessionResult{})
	if err == nil || !strings.Contains(err.Error(), "Unknown function GetCatalogs") {
		t.Fatalf("err %v", err)
	}
}

// ctxKey proves the request context reaches the TCLIService implementation.
type ctxKey struct{}

type ctxService struct {
	*fakeService
	seen chan any
}

func (s ctxService) OpenSession(ctx context.Context, req *tcliservice.TOpenSessionReq) (*tcliservice.TOpenSessionResp, error) {
	s.seen <- ctx.Value(ctxKey{})
	return s.fakeService.OpenSession(ctx, req)
}

func TestHandlerPassesRequestContext(t *testing.T) {
	svc := ctxService{newFakeService(), make(chan any, 1)}
	h := NewHandler(svc)
	mw := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, r.Header.Get("User-Agent"))))
	})
	srv := httptest.NewServer(mw)
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, func(o *Options) { o.UserAgent = "dbxtop/1.2.3" })
	if _, err := c.OpenSession(context.Background(), "wh1"); err != nil {
		t.Fatal(err)
	}
	if got := <-svc.seen; got != "dbxtop/1.2.3" {
		t.Fatalf("context value %v", got)
	}
}

// A request whose list length is forged to overflow thrift's int32 size
// check (0x80000001 × 4 bytes) must be refused, not panic the processor.
func TestHandlerForgedListLength(t *testing.T) {
	var b bytes.Buffer
	b.Write([]byte{0x80, 0x01, 0x00, 0x01}) // strict CALL
	b.Write([]byte{0, 0, 0, 11})
	b.WriteString("OpenSession")
	b.Write([]byte{0, 0, 0, 1})             // seqid
	b.Write([]byte{0x0c, 0x00, 0x01})       // field 1 req: struct
	b.Write([]byte{0x0d, 0x00, 0x04})       // field 4 configuration: map
	b.Write([]byte{0x0b, 0x0b})             // string → string
	b.Write([]byte{0x80, 0x00, 0x00, 0x01}) // forged size
	w := httptest.NewRecorder()
	NewHandler(newFakeService()).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", &b))
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	err := decodeReply(context.Background(), "OpenSession", 1, w.Body.Bytes(), &tcliservice.TCLIServiceOpenSessionResult{})
	if err == nil || !strings.Contains(err.Error(), "map of") {
		t.Fatalf("err %v, want a protocol error about the map size", err)
	}
}
