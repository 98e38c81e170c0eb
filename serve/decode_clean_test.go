package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/peertest"
)

// TestAttachDecodedStringsAreClean: every string attach decodes from a
// serve is cleaned where it is decoded. The health answer and the event
// are filled by reflection, every string hostile (the event's kind too),
// so a field added to either later fails this test until it is cleaned;
// the snapshot's wire form has its own (model's
// TestDecodedSnapshotStringsAreClean).
func TestAttachDecodedStringsAreClean(t *testing.T) {
	var h HealthInfo
	peertest.Fill(&h)
	h.Refresh = "1s" + peertest.Hostile
	var ev EventJSON
	peertest.Fill(&ev)
	ev.At = time.Now()
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(hb) })
	mux.HandleFunc("/api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(append(eb, '\n'))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var decoded HealthInfo
	if err := json.Unmarshal(hb, &decoded); err != nil {
		t.Fatal(err)
	}
	report(t, "health", decoded)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Attach(ctx, srv.URL, "tok", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.hc.CloseIdleConnections()
	defer c.shc.CloseIdleConnections()
	report(t, "poller health", c.Health())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = c.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	select {
	case got := <-c.Events():
		report(t, "event", got)
		if string(got.Kind) != "unknown" || !strings.HasPrefix(got.Message, "(kind a") {
			t.Errorf("an unknown kind came through as %q, message %q; want \"unknown\" and the kind, cleaned, in the message", got.Kind, got.Message)
		}
	case <-ctx.Done():
		t.Fatal("no event from the hostile serve")
	}
}

func report(t *testing.T, what string, v any) {
	t.Helper()
	bad, seen := peertest.Unclean(v)
	for _, p := range bad {
		t.Errorf("%s: %s keeps the peer's control sequences: clean it where it is decoded", what, p)
	}
	if seen == 0 {
		t.Errorf("%s: no string came through decoding", what)
	}
}
