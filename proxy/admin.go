package proxy

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/sources"
)

// Admin API paths (docs/proxy.md "Admin API").
const (
	PathOperations = "/v1/operations"
	PathStats      = "/v1/stats"
	PathHealth     = "/v1/health"
)

// OperationsDoc is the JSON of GET /v1/operations.
type OperationsDoc struct {
	GeneratedAt time.Time                `json:"generated_at"`
	Upstream    string                   `json:"upstream"`
	Operations  []sources.ProxyOperation `json:"operations"`
}

// Health is the JSON of GET /v1/health.
type Health struct {
	Status   string    `json:"status"`
	Upstream string    `json:"upstream"`
	Since    time.Time `json:"since"`
	Heal     bool      `json:"heal"`
	// CloseAbandoned is the --close-abandoned period in Go syntax, "" off.
	CloseAbandoned string `json:"close_abandoned"`
	Version        string `json:"version"`
}

// AdminHandler serves the admin API behind the bearer token: the facts
// per operation, the counters, health, and dbxtop's close and cancel of a
// proxied operation with its real handle. It never returns a client's
// token, a handle secret or a request body.
func (p *Proxy) AdminHandler(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathOperations, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, OperationsDoc{GeneratedAt: p.clk.Now().UTC(), Upstream: p.upstream.String(), Operations: p.st.snapshot()})
	})
	mux.HandleFunc("GET "+PathStats, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Stats())
	})
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, r *http.Request) {
		h := Health{Status: "ok", Upstream: p.upstream.String(), Since: p.started.UTC(), Heal: p.o.Heal, Version: strings.TrimPrefix(p.o.UserAgent, "dbxtop-proxy/")}
		if p.o.CloseAbandoned > 0 {
			h.CloseAbandoned = p.o.CloseAbandoned.String()
		}
		writeJSON(w, http.StatusOK, h)
	})
	mux.HandleFunc("GET "+PathVector, p.serveVector)
	act := func(do func(*Proxy, *http.Request, string) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id := r.PathValue("id")
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
	mux.HandleFunc("POST "+PathOperations+"/{id}/close", act(func(p *Proxy, r *http.Request, id string) error { return p.Close(r.Context(), id) }))
	mux.HandleFunc("POST "+PathOperations+"/{id}/cancel", act(func(p *Proxy, r *http.Request, id string) error { return p.Cancel(r.Context(), id) }))
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dbxtop-proxy admin"`)
			writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "the admin API needs Authorization: Bearer <admin token>")
			return
		}
		mux.ServeHTTP(w, r)
	})
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
