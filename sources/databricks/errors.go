package databricks

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/databricks/databricks-sdk-go/apierr"

	"github.com/dbxtop/dbxtop/sources"
)

// wrapErr turns what an SDK call returned into what the poller classifies:
// an *apierr.APIError becomes a *sources.HTTPError (Cause keeps the APIError
// so errors.Is(err, apierr.ErrResourceExhausted) still holds); anything else
// (transport, context, auth-provider errors) is wrapped with the call name.
func (c *Client) wrapErr(call string, err error) error {
	if err == nil {
		return nil
	}
	var ae *apierr.APIError
	if errors.As(err, &ae) {
		return httpErrorFrom(call, ae, c.conf.Token, c.Host(), c.now())
	}
	text := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		// "Get /api/…: cause" without host and query string: shorter, and
		// the call name already says what was asked.
		path := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			path = u.Path
		}
		text = strings.ToUpper(ue.Op) + " " + path + ": " + ue.Err.Error()
	}
	// One line, bounded: the SDK appends a request-log dump with the raw
	// answer to decoding errors.
	return &CallError{Call: call, msg: call + ": " + sources.OneLine(sources.RedactToken(text, c.conf.Token), 0), Err: err}
}

// CallError is a failed SDK call that got no HTTP answer (transport error,
// deadline, credential provider failure): the call name, a sanitised
// message, and the cause for errors.Is / errors.As (syscall.ECONNRESET,
// context.DeadlineExceeded, …).
type CallError struct {
	Call string
	msg  string
	Err  error
}

func (e *CallError) Error() string { return e.msg }
func (e *CallError) Unwrap() error { return e.Err }

// httpErrorFrom builds the HTTPError for one APIError; now anchors an
// HTTP-date Retry-After.
func httpErrorFrom(call string, ae *apierr.APIError, token, host string, now time.Time) *sources.HTTPError {
	he := &sources.HTTPError{
		Call:       call,
		StatusCode: ae.StatusCode,
		ErrorCode:  ae.ErrorCode,
		// One line, bounded: a gateway's HTML page becomes its title.
		Message: sources.OneLine(sources.RedactToken(ae.Message, token), 0),
		Cause:   ae,
	}
	details := ae.ErrorDetails()
	if details.RequestInfo != nil {
		he.RequestID = details.RequestInfo.RequestID
	}
	if ae.ResponseWrapper != nil && ae.ResponseWrapper.Response != nil {
		h := ae.ResponseWrapper.Response.Header
		if d, ok := sources.ParseRetryAfter(h.Get("Retry-After"), now); ok {
			he.RetryAfter, he.HasRetryAfter = d, true
		}
		if he.RequestID == "" {
			he.RequestID = firstHeader(h, "X-Request-Id", "X-Databricks-Request-Id")
		}
		if b := ae.ResponseWrapper.DebugBytes; len(b) > 0 {
			he.Body = sources.RedactToken(truncate(string(b), 512), token)
		}
	}
	if !he.HasRetryAfter && details.RetryInfo != nil && details.RetryInfo.RetryDelay > 0 {
		he.RetryAfter, he.HasRetryAfter = details.RetryInfo.RetryDelay, true
	}
	if ae.StatusCode == http.StatusUnauthorized {
		where := host
		if where == "" {
			where = "the workspace"
		}
		msg := "credentials were refused by " + where + " (check the token, profile or OAuth login)"
		if he.Message != "" && he.Message != http.StatusText(http.StatusUnauthorized) {
			msg += ": " + he.Message
		}
		he.Message = msg
	}
	return he
}

func firstHeader(h http.Header, keys ...string) string {
	for _, k := range keys {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// redactedError carries a sanitised message while keeping the cause for
// errors.Is / errors.As (the cause's own text is never printed by us).
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// unknownStatement is the Statement Execution API's 404 for a statement
// dbxtop did not see run through that API (dbxtop runs none itself, and
// the proxy carries Thrift): the API may know only its own statements
// (docs/simulator.md), so the 404 says this source cannot tell, never
// that the operation is gone. It matches sources.ErrHandleGone and
// sources.ErrHandleUnverified, as a rebuilt Thrift handle's refusal does.
func unknownStatement(he *sources.HTTPError) error { return &unknownStmtError{he: he} }

type unknownStmtError struct{ he *sources.HTTPError }

func (e *unknownStmtError) Error() string {
	return e.he.Error() + " (the Statement Execution API may know only statements run through it, so this is not evidence that the operation is gone)"
}
func (e *unknownStmtError) Unwrap() []error {
	return []error{sources.ErrHandleGone, sources.ErrHandleUnverified, e.he}
}

// isGone reports a 404 / RESOURCE_DOES_NOT_EXIST answer about a statement.
func isGone(err error) (*sources.HTTPError, bool) {
	var he *sources.HTTPError
	if !errors.As(err, &he) {
		return nil, false
	}
	return he, he.ErrorCode == "RESOURCE_DOES_NOT_EXIST" || (he.ErrorCode == "" && he.StatusCode == http.StatusNotFound) || he.ErrorCode == "NOT_FOUND"
}
