package serve

import (
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/dbxtop/dbxtop/model"
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

	mu      sync.Mutex
	proxyUp map[[2]string]bool // (workspace, proxy) → answered
	skew    map[string]string  // workspace → the version skew last logged
}

func newWatch(log *slog.Logger) *watch {
	return &watch{log: log, proxyUp: map[[2]string]bool{}, skew: map[string]string{}}
}

// proxyCall is the call adminapi.Merged makes to each proxy's admin API
// once per discovery.
const proxyCall = "ProxyOperations"

// proxies records how each workspace's proxies fared (serve's tick): a
// proxy that stops answering, or never did, is a WARN once; one that
// answers again an INFO; proxies whose versions differ a WARN when that
// changes. A proxy no longer listed is forgotten.
func (w *watch) proxies(snaps []model.NamedSnapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	listed := map[[2]string]bool{}
	for _, ws := range snaps {
		for _, p := range ws.Workspace.Proxies {
			k := [2]string{ws.Name, p.Name}
			listed[k] = true
			if p.Reason == "not read yet" {
				continue
			}
			w.proxyRead(k, p.Up, p.Reason)
		}
		if skew := model.ProxyVersionSkew(ws.Workspace.Proxies); skew != w.skew[ws.Name] {
			w.skew[ws.Name] = skew
			if skew != "" {
				w.log.Warn(skew+": replicas of different versions may record operations differently", "workspace", ws.Name)
			}
		}
	}
	for k := range w.proxyUp {
		if !listed[k] {
			delete(w.proxyUp, k)
		}
	}
}

// proxyRead records one read of a proxy: a failure after success, or at
// first, is a WARN. The caller holds w.mu.
func (w *watch) proxyRead(k [2]string, ok bool, reason string) {
	was, seen := w.proxyUp[k]
	w.proxyUp[k] = ok
	switch {
	case !ok && (!seen || was):
		w.log.Warn("cannot read the dbxtop proxy: the evidence only it sees is missing", "workspace", k[0], "proxy", k[1], "call", proxyCall, "err", reason)
	case ok && seen && !was:
		w.log.Info("reading the dbxtop proxy again", "workspace", k[0], "proxy", k[1], "call", proxyCall)
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
