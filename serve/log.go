package serve

import (
	"io"
	"log/slog"
	"net/http"
	"sync"
)

// discardLogger is the logger of a Server given none.
var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// watch logs what serve learns of each workspace's proxy as it changes:
// WARN when it stops answering (the evidence only it sees is missing),
// INFO when it answers again. (The engines log a workspace they cannot
// observe themselves, at ERROR, once per outage.) Levels mean something:
// `journalctl -p warning` shows only what needs a look.
type watch struct {
	log *slog.Logger

	mu      sync.Mutex // the policies of several workspaces report
	proxyUp map[string]bool
}

func newWatch(log *slog.Logger) *watch {
	return &watch{log: log, proxyUp: map[string]bool{}}
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
