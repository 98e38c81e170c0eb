// Package adminapi is the admin API of `dbxtop proxy` as its two sides
// share it: the paths and wire types the proxy serves, and the client
// dbxtop reads it with (--proxy) — the facts per operation merged into
// dbxtop's own sources (Merged) and the Vector Search account merged into
// its capacity listing (MergedCapacity). See docs/proxy.md "Admin API".
//
// It imports model and sources only: the proxy (the server) and cmd (the
// wiring) import it; it never imports the proxy.
package adminapi

import (
	"time"
	"unicode/utf8"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Admin API paths (docs/proxy.md "Admin API").
const (
	PathOperations = "/v1/operations"
	PathStats      = "/v1/stats"
	PathHealth     = "/v1/health"
	PathMetrics    = "/metrics"
)

// OperationsDoc is the JSON of GET /v1/operations.
type OperationsDoc struct {
	GeneratedAt time.Time                `json:"generated_at"`
	Upstream    string                   `json:"upstream"`
	Operations  []sources.ProxyOperation `json:"operations"`
}

// Health is the JSON of GET /v1/health: no token needed, so it names no
// host, credential or operation. Status is "ok", or "upstream_unreachable"
// (HTTP 503) with UpstreamReason.
type Health struct {
	Status            string    `json:"status"`
	Since             time.Time `json:"since"`
	UpstreamReachable bool      `json:"upstream_reachable"`
	UpstreamReason    string    `json:"upstream_reason,omitempty"`
	UpstreamCheckedAt time.Time `json:"upstream_checked_at"`
	Version           string    `json:"version"`
}

// PathVector is the admin API's account of Vector Search index writes.
const PathVector = "/v1/vector"

// PathReady is the admin listener's readiness path: 200 while the proxy
// takes new sessions, 503 once it drains. /v1/health stays as it was
// (the process runs, the upstream answers).
const PathReady = "/v1/ready"

// MaxText bounds one client- or server-supplied string the admin API carries.
const MaxText = 512

// Clean makes server- or client-supplied text safe for output (the
// project's one sanitiser, textfmt.Line): one line, no control character,
// escape sequence or bidi override, credentials redacted, at most MaxText
// bytes.
func Clean(s string) string {
	if len(s) > 4*MaxText {
		s = s[:4*MaxText]
	}
	s = textfmt.Line(sources.Redact(s))
	if len(s) > MaxText {
		s = s[:MaxText]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
