package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// evil is text a hostile serve puts in every field: an OSC 52 clipboard
// write, a window retitle, a screen clear, a bell and a bidi override.
const evil = "x\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b[2J\x1b[H\x07\u202e\x9b31m"

func hostileSnapshot() model.Snapshot {
	bad := func(s string) string { return s + evil }
	open := true
	errInfo := func() *model.ErrorInfo {
		return &model.ErrorInfo{Kind: model.ErrorKind(bad("transport")), Call: bad("GetOperationStatus"), ErrorCode: bad("E"),
			Message: bad("boom"), RequestID: bad("req"), Attempts: 1}
	}
	op := &model.OperationView{Operation: &model.Operation{
		StatementID: bad("01ef"), WarehouseID: bad("wh"), User: bad("alice"), ClientApplication: bad("JDBC"),
		SQL: bad("SELECT 1"), State: model.StateRunning, ServerError: bad("failed"), Open: &open,
		LastError: errInfo(), Close: model.CloseInfo{State: model.CloseFailed, LastError: errInfo()},
		StatusSource: bad("thrift"), StatusNote: bad("note"), Workspace: bad("prod"),
		Proxy: &model.ProxyAccount{CloseOutcome: bad("close_failed"), ClientCloseError: errInfo(), LastCloseError: errInfo(),
			Actions: []string{bad("closed")}},
	}, Flags: []model.Flag{{Kind: model.FlagKind(bad("UNCLOSED")), Severity: model.SeverityWarning, Detail: bad("open for 5m")}}}
	return model.Snapshot{
		GeneratedAt: time.Now(),
		Workspace:   model.Workspace{Host: bad("https://h"), Warehouses: []string{bad("wh")}},
		Operations:  []*model.OperationView{op},
		Endpoints: []model.EndpointView{{Endpoint: model.Endpoint{Name: bad("vs"), Type: bad("STANDARD"), State: bad("ONLINE"),
			StateMessage: bad("msg"), RowLimitWhy: bad("why"), Workspace: bad("prod"), LastError: errInfo(), ListingError: errInfo(),
			Learned: &model.LearnedLimit{Rows: 1, RequestID: bad("r")}, Indexes: []model.Index{{Name: bad("ix"), Type: bad("t"), Message: bad("m")}}},
			Flags: []model.Flag{{Kind: model.FlagKind(bad("EXHAUSTED")), Severity: model.SeverityCritical, Detail: bad("full")}}}},
		Errors:     []model.ErrorInfo{*errInfo()},
		Clients:    []model.ClientStats{{ClientApplication: bad("JDBC"), User: bad("bob")}},
		Workspaces: []model.WorkspaceStatus{{Name: bad("prod"), Host: bad("https://h"), Warehouses: []string{bad("wh")}, Errors: []model.ErrorInfo{*errInfo()}}},
	}
}

// hostileServe is a fake serve on loopback whose every text carries
// escape sequences.
func hostileServe(t *testing.T) *httptest.Server {
	t.Helper()
	snap, err := json.Marshal(hostileSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	ev, err := json.Marshal(EventJSON{At: time.Now(), Kind: string(model.EventGiveUp), Workspace: "p" + evil, StatementID: "s" + evil,
		Endpoint: "e" + evil, Call: "c" + evil, Message: "m" + evil, RequestID: "r" + evil,
		Error: &model.ErrorInfo{Kind: model.KindTransport, Message: "e" + evil},
		Flag:  &model.Flag{Kind: model.FlagKind("K" + evil), Severity: model.SeverityWarning, Detail: "d" + evil}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/health", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(HealthInfo{Health: HealthJSON{LastError: &model.ErrorInfo{Kind: model.KindTransport, Message: "h" + evil, RequestID: evil}}})
	})
	mux.HandleFunc("/api/v1/snapshot", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(snap) })
	mux.HandleFunc("/api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(append(ev, '\n'))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// checkClean fails for any string reachable from v that holds a control
// character, an escape sequence's introducer or a bidi control.
func checkClean(t *testing.T, what string, v any) {
	t.Helper()
	var walk func(path string, rv reflect.Value)
	seen := 0
	walk = func(path string, rv reflect.Value) {
		switch rv.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !rv.IsNil() {
				walk(path, rv.Elem())
			}
		case reflect.Struct:
			for i := range rv.NumField() {
				if rv.Type().Field(i).IsExported() {
					walk(path+"."+rv.Type().Field(i).Name, rv.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range rv.Len() {
				walk(fmt.Sprintf("%s[%d]", path, i), rv.Index(i))
			}
		case reflect.String:
			seen++
			for _, r := range rv.String() {
				if r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '\u202e' {
					t.Errorf("%s%s holds %U: %q", what, path, r, rv.String())
					return
				}
			}
		}
	}
	walk("", reflect.ValueOf(v))
	if seen == 0 {
		t.Fatalf("%s: no strings walked", what)
	}
}

// TestAttachCleansAHostileServe: everything attach decodes from serve is
// cleaned at the boundary, as NewSnapshot cleans an engine's: no escape
// sequence from a hostile serve can reach the TUI, whatever the field.
func TestAttachCleansAHostileServe(t *testing.T) {
	srv := hostileServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Attach(ctx, srv.URL, "tok", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Snapshot()
	if len(s.Operations) != 1 || len(s.Endpoints) != 1 || len(s.Errors) == 0 {
		t.Fatalf("the hostile snapshot did not decode: %+v", s)
	}
	if !strings.Contains(s.Operations[0].SQL, "SELECT 1") {
		t.Fatalf("the text itself was lost: %q", s.Operations[0].SQL)
	}
	checkClean(t, "snapshot", s)
	checkClean(t, "health", c.Health())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = c.Run(runCtx); close(done) }()
	select {
	case ev := <-c.Events():
		checkClean(t, "event", ev)
	case <-ctx.Done():
		t.Fatal("no event from the hostile serve")
	}
	stop()
	<-done
	c.shc.CloseIdleConnections()
	c.hc.CloseIdleConnections()
}

// TestAttachRefusesRedirects: a serve (or anything at its URL) answering
// with a redirect to another port gets an error naming it, and the token
// never reaches the other port.
func TestAttachRefusesRedirects(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(HealthInfo{})
	}))
	defer other.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := Attach(ctx, redir.URL, "secret-serve-token", "", nil)
		cancel()
		redir.Close()
		if !errors.Is(err, ErrRedirect) || !strings.Contains(err.Error(), other.URL) {
			t.Errorf("HTTP %d: %v, want ErrRedirect naming %s", code, err, other.URL)
		}
		if err != nil && strings.Contains(err.Error(), "secret-serve-token") {
			t.Errorf("HTTP %d: the error holds the token: %v", code, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Fatalf("the redirect target was called %d time(s), Authorization %q", len(leaked), leaked)
	}
}

func TestServeRefusesPlainHTTPOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr          string
		tls, insecure bool
		wantRefused   bool
	}{
		{"127.0.0.1:0", false, false, false},
		{"localhost:0", false, false, false},
		{"[::1]:0", false, false, false},
		{"0.0.0.0:9464", false, false, true},
		{":9464", false, false, true},
		{"192.0.2.1:9464", false, false, true},
		{"0.0.0.0:9464", true, false, false},
		{"0.0.0.0:9464", false, true, false},
	} {
		err := CheckListen(tc.addr, tc.tls, tc.insecure)
		if (err != nil) != tc.wantRefused {
			t.Errorf("%s tls=%v insecure=%v: %v, want refused=%v", tc.addr, tc.tls, tc.insecure, err, tc.wantRefused)
		}
		if err != nil && !strings.Contains(err.Error(), "--insecure-listen") {
			t.Errorf("%s: %v does not name the way out", tc.addr, err)
		}
	}
}
