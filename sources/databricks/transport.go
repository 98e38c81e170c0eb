package databricks

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/dbxtop/dbxtop/sources"
)

// sdkTransport sits below the SDK's retry loop. It marks every request with
// dbxtop's User-Agent (the simulator counts "dbxtop/" callers as observers,
// not as the owning client's activity) and hides transport errors from the
// SDK's substring-based retry rule, so a reset is returned after one attempt
// and the poller decides, on a fresh connection.
type sdkTransport struct {
	base      http.RoundTripper
	userAgent string
	// fresh carries the retries of transport errors (the policy marks them,
	// sources.FreshConnRequested): it keeps no connection, so such a retry
	// never lands on a pooled one as stale as the one that failed.
	fresh http.RoundTripper
}

func (t *sdkTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.userAgent != "" {
		r = r.Clone(r.Context())
		ua := t.userAgent
		if sdkUA := r.Header.Get("User-Agent"); sdkUA != "" {
			ua += " " + sdkUA
		}
		r.Header.Set("User-Agent", ua)
	}
	base := t.base
	if t.fresh != nil && sources.FreshConnRequested(r.Context()) {
		base = t.fresh
	}
	resp, err := base.RoundTrip(r)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return nil, &transportError{err: err}
	}
	return resp, err
}

// transportError keeps the cause reachable (errors.Is(err,
// syscall.ECONNRESET) still holds) but rewords the phrases the SDK's
// isRetriableUrlError looks for.
type transportError struct{ err error }

func (e *transportError) Error() string { return "transport: " + unmagic(e.err.Error()) }
func (e *transportError) Unwrap() error { return e.err }

// sdkRetryPhrases are databricks-sdk-go's urlErrorTransientErrorMessages
// (httpclient/errors.go) with a same-meaning rewording each.
var sdkRetryPhrases = strings.NewReplacer(
	"connection reset by peer", "connection reset (by peer)",
	"TLS handshake timeout", "TLS handshake timed out",
	"connection refused", "connection was refused",
	"Unexpected error", "unexpected error",
	"i/o timeout", "I/O timeout",
)

func unmagic(s string) string { return sdkRetryPhrases.Replace(s) }
