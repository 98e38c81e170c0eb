package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
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

// TestAttachNamesItsCap: a snapshot larger than attach's cap is reported
// as over the cap (not as a broken connection), and attach stops reading
// there, announced (Content-Length) or not (chunked).
func TestAttachNamesItsCap(t *testing.T) {
	const limit = 1 << 20
	for _, announced := range []bool{true, false} {
		var sent atomic.Int64
		mux := http.NewServeMux()
		mux.HandleFunc("/api/v1/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{}`)) })
		mux.HandleFunc("/api/v1/snapshot", func(w http.ResponseWriter, r *http.Request) {
			chunk := []byte(`{"schema":"` + strings.Repeat("x", 64<<10))
			if announced {
				w.Header().Set("Content-Length", strconv.Itoa(100*limit))
			}
			for i := 0; i < 100*limit/len(chunk) && r.Context().Err() == nil; i++ {
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
		srv := httptest.NewServer(mux)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := Attach(ctx, srv.URL, "tok", "", nil)
		cancel()
		if err != nil {
			srv.Close()
			t.Fatal(err)
		}
		c.maxBody = limit
		s := c.Snapshot()
		c.hc.CloseIdleConnections()
		srv.Close()
		if len(s.Errors) != 1 || !strings.Contains(s.Errors[0].Message, "exceeds attach's cap of 1.0 MiB") {
			t.Fatalf("announced=%v: %+v, want an error naming the 1.0 MiB cap", announced, s.Errors)
		}
		// The server's writes go into socket buffers ahead of the reader;
		// it must not have been able to send anywhere near all of it.
		if got := sent.Load(); got > 20*limit {
			t.Errorf("announced=%v: serve wrote %d bytes before attach stopped reading at %d", announced, got, limit)
		}
	}
}
