package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// logBuf collects the proxy's log lines (to check no token is in them).
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fetchBody encodes a FetchResults FETCH_NEXT request for ref.
func fetchBody(t *testing.T, ref sources.Ref, maxRows int64) []byte {
	t.Helper()
	h, err := thrift.OperationHandle(ref)
	if err != nil {
		t.Fatal(err)
	}
	return encodeFetchRows(h, maxRows)
}

func encodeFetch(h *tc.TOperationHandle) []byte { return encodeFetchRows(h, 1_000_000) }

func encodeFetchRows(h *tc.TOperationHandle, maxRows int64) []byte {
	buf := athrift.NewTMemoryBuffer()
	p := athrift.NewTBinaryProtocolConf(buf, nil)
	ctx := context.Background()
	_ = p.WriteMessageBegin(ctx, "FetchResults", athrift.CALL, 1)
	args := &tc.TCLIServiceFetchResultsArgs{Req: &tc.TFetchResultsReq{OperationHandle: h, Orientation: tc.TFetchOrientation_FETCH_NEXT, MaxRows: maxRows}}
	_ = args.Write(ctx, p)
	_ = p.WriteMessageEnd(ctx)
	return buf.Bytes()
}

func TestBadInputKeepsServing(t *testing.T) {
	s := startSim(t, "")
	logs := &logBuf{}
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	wh := s.WarehouseIDs()[0]
	path := p.URL() + thrift.DefaultHTTPPath(wh)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	post := func(body io.Reader) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, path, body)
		req.Header.Set("Authorization", "Bearer "+s.Token())
		req.Header.Set("Content-Type", thrift.ContentType)
		return http.DefaultClient.Do(req)
	}

	// Garbage: forwarded untouched; the server's own 400 comes back.
	resp, err := post(strings.NewReader("\x00\x01garbage, not thrift"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || p.Stats().NotThrift != 1 {
		t.Errorf("garbage: HTTP %d, stats %+v", resp.StatusCode, p.Stats())
	}

	// A truncated request body: the client promises more than it sends.
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 5000\r\n\r\n\x80\x01\x00\x01", thrift.DefaultHTTPPath(wh), s.Token())
	conn.Close()

	// A client that leaves in the middle of a large answer.
	c := client(t, p.URL(), s.Token(), "bigreader/1.0")
	sess, err := c.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT id FROM range(2000000)", false)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = post(bytes.NewReader(fetchBody(t, op.Ref, 2000000)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 4096); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// Other clients are still served.
	if n, _, err := runStatement(ctx, c, wh, "SELECT id FROM range(10)"); err != nil || n != 10 {
		t.Fatalf("after bad input: %d rows, %v", n, err)
	}
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	all := logs.String() + fmt.Sprint(doc) + fmt.Sprint(p.Stats())
	if strings.Contains(all, s.Token()) {
		t.Error("a client token reached the proxy's log or admin output")
	}
}

func TestUpstreamHangsOrAnswersHTML(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body>Sign in</body></html>")
	}))
	defer html.Close()

	pol := fastPolicy()
	pol.AttemptTimeout = 100 * time.Millisecond
	ph := startProxy(t, hang.URL, Options{Heal: true, Policy: pol})
	pm := startProxy(t, html.URL, Options{Heal: true, Policy: pol})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref := sources.Ref{StatementID: "01234567-89ab-cdef-0123-456789abcdef", WarehouseID: "w1"}

	_, err := client(t, ph.URL(), "tok-abc-123456", "app/1").GetOperationStatus(ctx, ref)
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusBadGateway || !strings.Contains(he.Message, "attempt") {
		t.Fatalf("hanging upstream: want a 502 saying the attempts ran out, got %v", err)
	}
	_, err = client(t, pm.URL(), "tok-abc-123456", "app/1").GetOperationStatus(ctx, ref)
	var de *thrift.DecodeError
	if !errors.As(err, &de) || !strings.Contains(de.Body, "Sign in") {
		t.Fatalf("HTML upstream: want the page passed through (a decode error at the client), got %v", err)
	}
	if pm.Stats().Undecodable == 0 {
		t.Errorf("HTML answer not counted as undecodable: %+v", pm.Stats())
	}
}

func TestAdminNeedsToken(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{})
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + s.Token()} {
		req, _ := http.NewRequest(http.MethodGet, p.AdminURL()+adminapi.PathOperations, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("auth %q: HTTP %d, want 401", auth, resp.StatusCode)
		}
	}
	var h adminapi.Health
	if code := adminGet(t, p, adminapi.PathHealth, &h); code != 200 || h.Status != "ok" {
		t.Errorf("health: %d %+v", code, h)
	}
}

func TestListenRules(t *testing.T) {
	for _, tc := range []struct {
		addr          string
		tls, insecure bool
		ok            bool
	}{
		{"127.0.0.1:0", false, false, true},
		{"[::1]:8444", false, false, true},
		{"localhost:1", false, false, true},
		{"0.0.0.0:8444", false, false, false},
		{"0.0.0.0:8444", true, false, true},
		{"10.1.2.3:8444", false, true, true},
		{"nonsense", false, false, false},
	} {
		if err := CheckListen(tc.addr, tc.tls, tc.insecure); (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, tls=%v, insecure=%v) = %v", tc.addr, tc.tls, tc.insecure, err)
		}
	}
	for _, u := range []string{"http://example.com", "https://u:p@x", "https://x/path", "ftp://x"} {
		if _, err := ParseUpstream(u); err == nil {
			t.Errorf("ParseUpstream(%q) accepted", u)
		}
	}
	for _, u := range []string{"https://adb-1.2.azuredatabricks.net", "http://127.0.0.1:9"} {
		if _, err := ParseUpstream(u); err != nil {
			t.Errorf("ParseUpstream(%q): %v", u, err)
		}
	}
}
