package proxy

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/dbxtop/dbxtop/internal/preauth"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// AdminHandler serves the admin API behind the bearer token: the facts
// per operation, the counters, health, and dbxtop's close and cancel of a
// proxied operation with its real handle. It never returns a client's
// token, a handle secret or a request body.
func (p *Proxy) AdminHandler(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+adminapi.PathOperations, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, adminapi.OperationsDoc{GeneratedAt: p.clk.Now().UTC(), Upstream: p.upstream.String(), Operations: p.st.snapshot()})
	})
	mux.HandleFunc("GET "+adminapi.PathStats, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Stats())
	})
	mux.Handle("GET "+adminapi.PathMetrics, p.metrics.handler())
	mux.HandleFunc("GET "+adminapi.PathVector, p.serveVector)
	mux.HandleFunc("GET "+adminapi.PathLastCall, p.serveLastCall)
	act := func(do func(*Proxy, *http.Request, string) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id := r.PathValue("id")
			if _, err := thrift.GUIDFromStatementID(id); err != nil {
				// Not an id the proxy could hold: refused without repeating it.
				writeError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "not a statement id (want a UUID); the proxy has not seen it")
				return
			}
			err := do(p, r, id)
			switch {
			case err == nil:
				writeJSON(w, http.StatusOK, map[string]any{"statement_id": id, "ok": true})
			case errors.Is(err, ErrUnknownOperation):
				writeError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", err.Error())
			case errors.Is(err, sources.ErrHandleGone):
				writeJSON(w, http.StatusOK, map[string]any{"statement_id": id, "ok": true, "gone": true})
			default:
				writeError(w, http.StatusBadGateway, "UPSTREAM_FAILED", clean(sources.Redact(err.Error())))
			}
		}
	}
	mux.HandleFunc("POST "+adminapi.PathOperations+"/{id}/close", act(func(p *Proxy, r *http.Request, id string) error { return p.Close(r.Context(), id) }))
	mux.HandleFunc("POST "+adminapi.PathOperations+"/{id}/cancel", act(func(p *Proxy, r *http.Request, id string) error { return p.Cancel(r.Context(), id) }))
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == adminapi.PathHealth && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			p.serveHealth(w, r)
			return
		}
		if r.URL.Path == adminapi.PathReady && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			p.serveReady(w, r)
			return
		}
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dbxtop-proxy admin"`)
			writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "the admin API needs Authorization: Bearer <admin token>")
			return
		}
		preauth.MarkAuthenticated(r.Context())
		mux.ServeHTTP(w, r)
	})
}

// serveHealth answers /v1/health without a token: whether the proxy runs
// and the upstream answers (probed at most every few seconds).
func (p *Proxy) serveHealth(w http.ResponseWriter, r *http.Request) {
	ok, why, at := p.probeUpstream(r.Context())
	h := adminapi.Health{Status: "ok", Since: p.started.UTC(), UpstreamReachable: ok, UpstreamReason: why,
		UpstreamCheckedAt: at.UTC(), Version: strings.TrimPrefix(p.o.UserAgent, "dbxtop-proxy/")}
	code := http.StatusOK
	if !ok {
		h.Status, code = "upstream_unreachable", http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error_code": code, "message": msg})
}
