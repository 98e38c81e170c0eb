package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// logBuffer collects JSON log records.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records are the records whose message starts with msg.
func (b *logBuffer) records(msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(b.buf.String(), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && strings.HasPrefix(r["msg"].(string), msg) {
			out = append(out, r)
		}
	}
	return out
}

// TestServeLogLevels: serve's own records mean something by their level:
// WARN for a request refused for its credentials (never the token), for
// a proxy that stops answering and for an action that failed, with the
// call as an attribute.
func TestServeLogLevels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, deadURL := liveAndDead(t, ctx)

	var logs logBuffer
	c := NewCounters()
	fleet := poller.NewFleet(time.Hour, workspaceRW(t, ctx, "live", srv.URL(), srv.Token(), c, false), workspaceRW(t, ctx, "down", deadURL, "x", c, false))
	s, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, Counters: c, Tick: 50 * time.Millisecond, ActToken: "act-token-0123456789",
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan struct{}, 2)
	go func() { _ = fleet.Run(ctx); runDone <- struct{}{} }()
	go func() { _ = s.Run(ctx); runDone <- struct{}{} }()
	defer func() { cancel(); <-runDone; <-runDone }()

	px := func(up bool, version string) []model.NamedSnapshot {
		p := model.ProxyStatus{Name: "127.0.0.2:8445", Up: up, Version: "1.0"}
		if !up {
			p.Reason = "connection refused"
		}
		q := model.ProxyStatus{Name: "127.0.0.3:8445", Up: true, Version: version}
		return []model.NamedSnapshot{{Name: "live", Snapshot: model.Snapshot{Workspace: model.Workspace{Proxies: []model.ProxyStatus{p, q}}}}}
	}
	s.watch.proxies(px(false, "1.0"))
	s.watch.proxies(px(false, "1.0"))
	s.watch.proxies(px(true, "1.0"))
	if w, i := logs.records("cannot read the dbxtop proxy"), logs.records("reading the dbxtop proxy again"); len(w) != 1 || w[0]["level"] != "WARN" ||
		w[0]["workspace"] != "live" || w[0]["proxy"] != "127.0.0.2:8445" || len(i) != 1 {
		t.Errorf("proxy: %v then %v; want one WARN when it stops answering, one INFO when it answers again", w, i)
	}
	s.watch.proxies(px(true, "1.1"))
	s.watch.proxies(px(true, "1.1"))
	if w := logs.records("proxy versions differ"); len(w) != 1 || w[0]["level"] != "WARN" {
		t.Errorf("versions differ: %v; want one WARN", w)
	}
	if code, _ := get(t, s.URL()+"/metrics", "wrong-token-4242"); code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: HTTP %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v1/operations/01234567-89ab-cdef-0123-456789abcdef/cancel", nil)
	req.Header.Set("Authorization", "Bearer act-token-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	refused := logs.records("request refused")
	if len(refused) != 1 || refused[0]["level"] != "WARN" || refused[0]["status"] != float64(401) || refused[0]["path"] != "/metrics" {
		t.Errorf("request refused: %v", refused)
	}
	failed := logs.records("action failed")
	if len(failed) != 1 || failed[0]["level"] != "WARN" || failed[0]["call"] != "cancel" {
		t.Errorf("action failed: %v", failed)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if strings.Contains(logs.buf.String(), "wrong-token-4242") || strings.Contains(logs.buf.String(), "act-token-0123456789") {
		t.Errorf("a token reached the log:\n%s", logs.buf.String())
	}
}
