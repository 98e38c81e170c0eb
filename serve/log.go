package serve

import (
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/dbxtop/dbxtop/poller"
)

// discardLogger is the logger of a Server given none.
var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// watch logs what serve learns of each workspace as it changes (it runs
// with the counters' tick): ERROR when dbxtop can no longer observe a
// workspace (its discovery fails: every alert for it is blind), INFO when
// it can again; WARN when its proxy stops answering. Levels mean
// something: `journalctl -p warning` shows only what needs a look.
type watch struct {
	log *slog.Logger
	up  map[string]bool // discovery up, by workspace, as last logged (tick only)

	mu      sync.Mutex // proxyUp: the policies of several workspaces report
	proxyUp map[string]bool
}

func newWatch(log *slog.Logger) *watch {
	return &watch{log: log, up: map[string]bool{}, proxyUp: map[string]bool{}}
}

func (w *watch) observe(members []poller.Member) {
	for _, m := range members {
		h := m.Engine.Health()
		if h.LastDiscovery.IsZero() && h.DiscoveryFailures == 0 {
			continue // no discovery answered yet: nothing known
		}
		was, seen := w.up[m.Name]
		w.up[m.Name] = h.DiscoveryUp
		if seen && was == h.DiscoveryUp || !seen && h.DiscoveryUp {
			continue
		}
		if h.DiscoveryUp {
			w.log.Info("observing the workspace again", "workspace", m.Name)
			continue
		}
		attrs := []any{"workspace", m.Name}
		if e := h.LastError; e != nil {
			attrs = append(attrs, "call", e.Call, "attempt", e.Attempts, "err", e.String())
		}
		w.log.Error("cannot observe the workspace: its discovery fails; its alerts are blind", attrs...)
	}
}

// proxyRead records one read of a workspace's proxy (the counters' Done
// hook for its call): a failure after success, or at first, is a WARN.
func (w *watch) proxyRead(workspace string, ok bool, err error) {
	w.mu.Lock()
	was, seen := w.proxyUp[workspace]
	w.proxyUp[workspace] = ok
	w.mu.Unlock()
	switch {
	case !ok && (!seen || was):
		w.log.Warn("cannot read the dbxtop proxy: the evidence only it sees is missing", "workspace", workspace, "call", proxyCall, "err", err)
	case ok && seen && !was:
		w.log.Info("reading the dbxtop proxy again", "workspace", workspace, "call", proxyCall)
	}
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Flush passes streaming through (the events API flushes each line).
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// logRefused logs a request serve refused for its credentials (401, 403)
// at WARN: the path, the client's address, the status — never a token.
func (s *Server) logRefused(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusUnauthorized || rec.status == http.StatusForbidden {
			s.log.Warn("request refused", "status", rec.status, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		}
	})
}
