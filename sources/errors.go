package sources

import (
	"errors"
	"fmt"
	"time"
)

// ErrProbeSkipped means the capacity probe sent nothing to an endpoint
// (it holds no Direct Vector Access index: upserts serve only those);
// the error's text says why.
var ErrProbeSkipped = errors.New("capacity probe skipped")

// ErrHandleGone means the server no longer has the operation (closed,
// reaped, or never existed): Thrift INVALID_HANDLE or REST
// RESOURCE_DOES_NOT_EXIST. Closing such an operation is done.
var ErrHandleGone = errors.New("the server no longer has this operation")

// ErrHandleUnverified means the server found no operation for a reference
// dbxtop made from a statement id alone: Thrift INVALID_HANDLE to a handle
// rebuilt without its secret, or the Statement Execution API's 404 for a
// statement dbxtop did not see run through that API. A server that checks
// handle secrets refuses such handles for live operations too, and the
// API may know only its own statements, so the answer is not evidence
// that the operation is gone: this source cannot tell, and other sources
// (query history, the proxy) decide.
var ErrHandleUnverified = errors.New("the server knows no operation by this statement id alone (not evidence that the operation is gone)")

// HTTPError is a non-2xx HTTP answer with what the server said: the
// status, the Databricks error body and the retry hints. Both the Thrift
// and the REST clients return it, so the poller classifies them alike.
type HTTPError struct {
	Call          string // RPC or SDK method name
	StatusCode    int
	ErrorCode     string // Databricks error_code, "" if none
	Message       string
	RequestID     string        // from details[RequestInfo] or the x-request-id header
	RetryAfter    time.Duration // Retry-After header or RetryInfo; 0 when absent
	HasRetryAfter bool
	Body          string // raw body, truncated, for the detail view
	Cause         error  // optional underlying error (e.g. *apierr.APIError)
}

func (e *HTTPError) Error() string { return e.Call + ": " + e.Detail() }

// Detail is the error without the call: status, error_code, message and
// request id, for a caller that names the call itself.
func (e *HTTPError) Detail() string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if e.ErrorCode != "" {
		s += " " + e.ErrorCode
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " (request_id " + e.RequestID + ")"
	}
	return s
}

func (e *HTTPError) Unwrap() error { return e.Cause }

// ServerError is a Thrift TStatus of ERROR (the call reached the server and
// it refused), or a statement that the server reports failed to run.
type ServerError struct {
	Call       string
	StatusCode int32 // TStatusCode
	SQLState   string
	ErrorCode  int32
	Message    string
}

func (e *ServerError) Error() string {
	s := fmt.Sprintf("%s: server error", e.Call)
	if e.SQLState != "" {
		s += " [" + e.SQLState + "]"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}
