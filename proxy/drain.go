package proxy

import (
	"context"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"io"
	"net/http"
	"strings"
	"time"
)

// drainGrace bounds the requests still in flight once the drain's wait
// is over: the listener then closes and they get this long to finish.
const drainGrace = 10 * time.Second

// drainRetryAfter is the Retry-After of a refused OpenSession: by then
// the replacement proxy (or the restarted one) takes it.
const drainRetryAfter = "5"

// refuseOpenSession answers a new session while draining: 503 with
// Retry-After and a Databricks-style error body, never forwarded.
func (p *Proxy) refuseOpenSession(req *http.Request) *http.Response {
	p.stats.drainRefused.Add(1)
	body := `{"error_code":"TEMPORARILY_UNAVAILABLE","message":"dbxtop-proxy: draining (shutting down); new sessions go to the next proxy, retry shortly"}`
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", drainRetryAfter)
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

// serveReady answers PathReady.
func (p *Proxy) serveReady(w http.ResponseWriter, _ *http.Request) {
	if p.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// busy counts what a drain waits for: client requests in flight and
// operations still open that are not the proxy's own queued closes.
func (p *Proxy) busy() (requests int64, open int) {
	return p.inflight.Load(), p.st.openCount()
}

// Drain is the proxy's answer to SIGTERM. It fails PathReady and refuses
// new OpenSession calls (503, Retry-After), but keeps accepting
// connections and serving every call of the sessions and operations it
// holds until no operation is open and no request in flight, or ctx ends
// (--drain-timeout). Operations still open then are left alone — their
// clients may continue through a restarted proxy, as after kill -9 —
// with one WARN line and a metric; then Close stops the listeners
// (requests still in flight get drainGrace) and persists the closes
// already queued.
func (s *Server) Drain(ctx context.Context) error {
	t0 := time.Now()
	s.draining.Store(true)
	s.log.Info("draining: /v1/ready fails and new sessions are refused; held sessions and operations are served until they end", "ready", adminapi.PathReady)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, open := s.busy()
		if req == 0 && open == 0 {
			break
		}
		select {
		case <-ctx.Done():
			s.stats.drainLeftOpen.Store(int64(open))
			s.log.Warn("drain timeout with operations still open: left alone for their clients to continue through the next proxy",
				"open_operations", open, "requests_in_flight", req, "waited", time.Since(t0).Round(time.Millisecond).String(),
				"fix", "raise --drain-timeout (and the service manager's stop timeout) above the longest statement")
			return s.closeWithin(drainGrace)
		case <-tick.C:
		}
	}
	return s.closeWithin(drainGrace)
}

func (s *Server) closeWithin(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.Close(ctx)
}
