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
// ERROR once when a workspace cannot be observed, WARN for a request
// refused for its credentials (never the token) and for an action that
// failed, with the workspace, call and attempt as attributes.
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

	await(t, "the ERROR for the workspace that cannot be observed", func() bool { return len(logs.records("cannot observe")) > 0 })
	r := logs.records("cannot observe")[0]
	if r["level"] != "ERROR" || r["workspace"] != "down" || r["call"] == nil || r["attempt"] == nil {
		t.Errorf("cannot observe: %v", r)
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
	if n := len(logs.records("cannot observe")); n != 1 {
		t.Errorf("%d ERROR records for one outage: want one, when it starts", n)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if strings.Contains(logs.buf.String(), "wrong-token-4242") || strings.Contains(logs.buf.String(), "act-token-0123456789") {
		t.Errorf("a token reached the log:\n%s", logs.buf.String())
	}
}
