package databricks

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// maxBody bounds each answer's body (0: MaxBody).
	maxBody int64
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
	if err != nil {
		return resp, err
	}
	limit := t.maxBody
	if limit <= 0 {
		limit = MaxBody
	}
	if resp.ContentLength > limit {
		_ = resp.Body.Close()
		return nil, &BodyTooLargeError{Limit: limit, Size: resp.ContentLength}
	}
	resp.Body = &boundedBody{rc: resp.Body, left: limit, limit: limit}
	return resp, nil
}

// MaxBody bounds every REST answer dbxtop reads, as thrift.MaxMessageSize
// bounds the Thrift ones. The largest legitimate answer is a query-history
// page of 500 statements with their SQL text (the API truncates query_text;
// a few MiB at most); 32 MiB leaves a wide margin and keeps a hostile or
// broken server from growing dbxtop without bound.
const MaxBody = 32 << 20

// BodyTooLargeError is an answer longer than MaxBody: dbxtop stops reading
// it. wrapErr adds the call's name. It is not retried (the same request
// would get the same answer).
type BodyTooLargeError struct {
	Limit int64
	Size  int64 // the announced Content-Length; -1 when unannounced
}

func (e *BodyTooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("answer of %d bytes exceeds dbxtop's limit of %d bytes on a REST answer", e.Size, e.Limit)
	}
	return fmt.Sprintf("answer exceeds dbxtop's limit of %d bytes on a REST answer; reading stopped", e.Limit)
}

// boundedBody fails the read that would pass the limit.
type boundedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte past the limit tells "exactly MaxBody" from "more".
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, &BodyTooLargeError{Limit: b.limit, Size: -1}
		}
		return b.rc.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

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
