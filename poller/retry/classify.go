package retry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// Call names one remote call for the policy: its RPC or SDK method name,
// whether repeating it is harmless (status polls, close, cancel, GETs) and
// the operation it concerns ("" for workspace calls).
type Call struct {
	Name string
	Safe bool
	OpID string
}

// Decision is what Classify concluded about one failed attempt.
type Decision struct {
	Retry bool
	Kind  model.ErrorKind
	// Wait is the server's hint (Retry-After or RetryInfo); 0 when none.
	Wait time.Duration
	// FreshConn asks the policy to drop idle pooled connections before the
	// retry, so it does not reuse the connection that just failed.
	FreshConn bool
	// Timeout marks timeouts, which cost more retry budget (as in the AWS
	// SDK standard mode): they hold resources longer on both sides.
	Timeout bool
	Reason  string
}

// Retryable Databricks error codes on 429/503: throttling, not capacity.
var throttleCodes = map[string]bool{
	"REQUEST_LIMIT_EXCEEDED":  true,
	"TOO_MANY_REQUESTS":       true,
	"TEMPORARILY_UNAVAILABLE": true,
	// Databricks' other "try later" codes (ServiceErrorCode).
	"WORKSPACE_TEMPORARILY_UNAVAILABLE": true,
	"SERVICE_UNDER_MAINTENANCE":         true,
	"":                                  true,
}

// Error codes that are permanent whatever the HTTP status: the code wins.
var permanentCodes = map[string]string{
	"RESOURCE_EXHAUSTED":      "the server is out of capacity or quota; repeating cannot help",
	"QUOTA_EXCEEDED":          "quota exceeded; repeating cannot help",
	"RESOURCE_DOES_NOT_EXIST": "the resource does not exist",
}

// Classify decides, for one call and the error of one attempt, whether to
// retry (docs/retry-policy.md §1). It only looks at the error: the policy adds the
// bounds (attempts, elapsed, budget, Retry-After cap).
func Classify(call Call, err error) Decision {
	if err == nil {
		return Decision{Reason: "success"}
	}
	if errors.Is(err, context.Canceled) {
		return Decision{Kind: model.KindCanceled, Reason: "canceled"}
	}
	if errors.Is(err, sources.ErrHandleGone) {
		return Decision{Kind: model.KindPermanent, Reason: "the server no longer has this operation"}
	}
	var he *sources.HTTPError
	if errors.As(err, &he) {
		return classifyHTTP(call, he.StatusCode, he.ErrorCode, he.RetryAfter)
	}
	var se *sources.ServerError
	if errors.As(err, &se) {
		return Decision{Kind: model.KindPermanent, Reason: "the server refused the call"}
	}
	// Stock Thrift THttpClient: "HTTP Response code: 503", no body kept.
	if code, ok := thriftHTTPStatus(err); ok {
		return classifyHTTP(call, code, "", 0)
	}
	if d, ok := classifyTransport(call, err); ok {
		return d
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Decision{Kind: model.KindCanceled, Reason: "the caller's deadline passed"}
	}
	return Decision{Kind: model.KindPermanent, Reason: "unclassified error; not retried"}
}

func classifyHTTP(call Call, status int, code string, wait time.Duration) Decision {
	if why, ok := permanentCodes[code]; ok {
		return Decision{Kind: model.KindPermanent, Reason: code + ": " + why}
	}
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		kind := model.KindThrottled
		if status == http.StatusServiceUnavailable {
			kind = model.KindUnavailable
		}
		if !throttleCodes[code] {
			return Decision{Kind: model.KindPermanent, Reason: "HTTP " + strconv.Itoa(status) + " " + code + " is not a throttling code"}
		}
		// The server did not process the request: safe to repeat any call.
		return Decision{Retry: true, Kind: kind, Wait: wait, Reason: "HTTP " + strconv.Itoa(status) + " throttled or unavailable"}
	case status == http.StatusRequestTimeout:
		return safeOnly(call, Decision{Kind: model.KindTransport, Wait: wait, Timeout: true, Reason: "HTTP 408 request timeout"})
	case status == http.StatusNotImplemented || status == http.StatusHTTPVersionNotSupported:
		return Decision{Kind: model.KindPermanent, Reason: "HTTP " + strconv.Itoa(status)}
	case status >= 500:
		// 500/502/504: the request may have been processed.
		return safeOnly(call, Decision{Kind: model.KindUnavailable, Wait: wait, Reason: "HTTP " + strconv.Itoa(status)})
	}
	return Decision{Kind: model.KindPermanent, Reason: "HTTP " + strconv.Itoa(status) + " client error"}
}

// safeOnly retries d when the call is safe to repeat.
func safeOnly(call Call, d Decision) Decision {
	if call.Safe {
		d.Retry = true
	} else {
		d.Reason += "; " + call.Name + " is not safe to repeat and may have reached the server"
	}
	return d
}

func thriftHTTPStatus(err error) (int, bool) {
	const marker = "HTTP Response code: "
	msg := err.Error()
	i := strings.Index(msg, marker)
	if i < 0 {
		return 0, false
	}
	rest := msg[i+len(marker):]
	j := 0
	for j < len(rest) && j < 3 && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	code, perr := strconv.Atoi(rest[:j])
	if perr != nil || code < 100 || code > 599 {
		return 0, false
	}
	return code, true
}

// classifyTransport recognises errors where no HTTP answer arrived.
func classifyTransport(call Call, err error) (Decision, bool) {
	fresh := Decision{Kind: model.KindTransport, FreshConn: true}
	// Never reached the server: retry even unsafe calls.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		var dns *net.DNSError
		if errors.As(err, &dns) && dns.IsNotFound {
			return Decision{Kind: model.KindPermanent, Reason: "host not found"}, true
		}
		fresh.Retry, fresh.Reason = true, "dial failed: the request never reached the server"
		fresh.Timeout = op.Timeout()
		return fresh, true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		fresh.Retry, fresh.Reason = true, "connection refused: the request never reached the server"
		return fresh, true
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		fresh.Reason = "connection reset"
	case errors.Is(err, syscall.EPIPE):
		fresh.Reason = "broken pipe"
	case errors.Is(err, io.ErrUnexpectedEOF):
		fresh.Reason = "connection closed mid-answer"
	case errors.Is(err, io.EOF):
		fresh.Reason = "connection closed without an answer (stale keep-alive)"
	case isTimeout(err):
		fresh.Reason, fresh.Timeout = "timed out waiting for the answer", true
	default:
		// Errors whose type was lost on the way (wrapped as text).
		msg := err.Error()
		switch {
		case strings.Contains(msg, "connection reset by peer"):
			fresh.Reason = "connection reset"
		case strings.Contains(msg, "broken pipe"):
			fresh.Reason = "broken pipe"
		case strings.Contains(msg, "server closed idle connection"), strings.HasSuffix(msg, "EOF"):
			fresh.Reason = "connection closed without an answer (stale keep-alive)"
		case strings.Contains(msg, "connection refused"):
			fresh.Retry, fresh.Reason = true, "connection refused: the request never reached the server"
			return fresh, true
		default:
			return Decision{}, false
		}
	}
	return safeOnly(call, fresh), true
}

// isTimeout reports a network timeout that is not merely the caller's own
// context deadline (http.Client.Timeout errors say so in their text).
func isTimeout(err error) bool {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return strings.Contains(err.Error(), "Client.Timeout") || strings.Contains(err.Error(), "i/o timeout")
	}
	return true
}
