package databricks

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Unified auth must see only what each test gives it: no developer
	// environment, no ~/.databrickscfg.
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DATABRICKS_") {
			os.Unsetenv(kv[:strings.IndexByte(kv, '=')])
		}
	}
	home, err := os.MkdirTemp("", "dbxtop-home")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	code := m.Run()
	if code == 0 {
		// opencensus (pulled in by the SDK's Google auth) starts a worker in
		// its package init: not ours, never ends.
		if err := goleak.Find(goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(home)
	os.Exit(code)
}

const testToken = "dapi-secret-token-0123456789"

// fakeWS is a loopback workspace answering Databricks-shaped JSON. Handlers
// are registered per "METHOD /path"; every request is counted and recorded.
type fakeWS struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	counts   map[string]int
	requests []*http.Request
}

func newFakeWS(t *testing.T) *fakeWS {
	t.Helper()
	f := &fakeWS{t: t, handlers: map[string]http.HandlerFunc{}, counts: map[string]int{}}
	// Discover refreshes the warehouse gate: an empty workspace by default.
	f.handlers["GET /api/2.0/sql/warehouses"] = func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"warehouses": []any{}})
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWS) handle(pattern string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[pattern] = h
}

func (f *fakeWS) serve(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.counts[key]++
	f.requests = append(f.requests, r.Clone(context.Background()))
	h, ok := f.handlers[key]
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Invalid access token.", "11111111-2222-4333-8444-555555555555")
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "ENDPOINT_NOT_FOUND", "no handler for "+key, "")
		return
	}
	h(w, r)
}

func (f *fakeWS) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[key]
}

func (f *fakeWS) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeWS) last() *http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

func (f *fakeWS) client(t *testing.T, mod ...func(*Config)) *Client {
	t.Helper()
	c := Config{Host: f.srv.URL, Token: testToken, UserAgent: "dbxtop/test"}
	for _, m := range mod {
		m(&c)
	}
	cl, err := New(context.Background(), c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(cl.CloseIdleConnections)
	return cl
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg, requestID string) {
	body := map[string]any{"error_code": code, "message": msg}
	if requestID != "" {
		body["details"] = []map[string]any{{
			"@type":      "type.googleapis.com/google.rpc.RequestInfo",
			"request_id": requestID,
		}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// resetConn answers with a real TCP reset: SO_LINGER 0, then close.
func resetConn(t *testing.T, w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		t.Errorf("response writer cannot hijack")
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func mustContain(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%q does not contain %q", s, p)
		}
	}
}

func mustNotContain(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(s, p) {
			t.Errorf("%q contains %q", s, p)
		}
	}
}
