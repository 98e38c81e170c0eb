package sources

import (
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dbxtop/dbxtop/textfmt"
)

// MaxErrorBody is how much of an error body HTTPError.Body keeps.
const MaxErrorBody = 512

// maxErrorMessage bounds a message taken from a non-JSON body.
const maxErrorMessage = 200

// Detail types of the Databricks error body (google.rpc error details).
const (
	typeRequestInfo = "type.googleapis.com/google.rpc.RequestInfo"
	typeRetryInfo   = "type.googleapis.com/google.rpc.RetryInfo"
)

// ParseHTTPError builds the HTTPError for a non-2xx answer to call: the
// status, the Databricks error body (error_code, message, RequestInfo
// request_id, RetryInfo retry_delay), Retry-After (seconds or HTTP-date)
// and x-request-id as a fallback request id. The body is kept truncated and
// sanitized; credentials never survive into it.
func ParseHTTPError(call string, status int, header http.Header, body []byte) *HTTPError {
	return ParseHTTPErrorAt(time.Now(), call, status, header, body)
}

// ParseHTTPErrorAt is ParseHTTPError with the clock injected: an HTTP-date
// Retry-After is turned into a delay relative to now.
func ParseHTTPErrorAt(now time.Time, call string, status int, header http.Header, body []byte) *HTTPError {
	e := &HTTPError{Call: call, StatusCode: status, Body: SanitizeBody(body)}

	if eb, ok := decodeErrorBody(body); ok {
		e.ErrorCode = sanitizeText(eb.ErrorCode, maxErrorMessage)
		e.Message = sanitizeText(eb.Message, 4*maxErrorMessage)
		if e.Message == "" {
			// Some endpoints answer {"error": "..."} or SCIM's {"detail": "..."}.
			e.Message = sanitizeText(firstNonEmpty(eb.Error, eb.Detail), 4*maxErrorMessage)
		}
		for _, d := range eb.Details {
			switch d.Type {
			case typeRequestInfo:
				if e.RequestID == "" {
					e.RequestID = sanitizeText(d.RequestID, 128)
				}
			case typeRetryInfo:
				if delay, ok := parseProtoDuration(d.RetryDelay); ok {
					e.RetryAfter, e.HasRetryAfter = delay, true
				}
			}
		}
	} else if len(body) > 0 {
		e.Message = messageFromText(e.Body)
	}

	// The header wins over RetryInfo: it is what the proxy in front of the
	// service enforces.
	if d, ok := ParseRetryAfter(header.Get("Retry-After"), now); ok {
		e.RetryAfter, e.HasRetryAfter = d, true
	}
	if e.RequestID == "" {
		e.RequestID = sanitizeText(header.Get("X-Request-Id"), 128)
	}
	return e
}

type errorBody struct {
	ErrorCode, Message, Error, Detail string
	Details                           []errorDetail
}

type errorDetail struct {
	Type, RequestID string
	RetryDelay      json.RawMessage
}

// decodeErrorBody reads a JSON error object field by field, so one field of
// an unexpected type (a numeric error_code, details as an object) costs
// that field only, not the whole body.
func decodeErrorBody(body []byte) (errorBody, bool) {
	var eb errorBody
	var raw map[string]json.RawMessage
	if len(body) == 0 || json.Unmarshal(body, &raw) != nil {
		return eb, false
	}
	eb.ErrorCode = jsonString(raw["error_code"])
	eb.Message = jsonString(raw["message"])
	eb.Error = jsonString(raw["error"])
	eb.Detail = jsonString(raw["detail"])
	var details []map[string]json.RawMessage
	if json.Unmarshal(raw["details"], &details) == nil {
		for _, d := range details {
			eb.Details = append(eb.Details, errorDetail{
				Type:       jsonString(d["@type"]),
				RequestID:  jsonString(d["request_id"]),
				RetryDelay: d["retry_delay"],
			})
		}
	}
	return eb, true
}

// jsonString reads a JSON string, or the text of a number, or "".
func jsonString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// parseProtoDuration reads a google.protobuf.Duration in its JSON form
// ("1.5s") or as an object {"seconds": 1, "nanos": 500000000}.
func parseProtoDuration(raw json.RawMessage) (time.Duration, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		s = strings.TrimSpace(s)
		if !strings.HasSuffix(s, "s") {
			return 0, false
		}
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64)
		return secondsToDuration(f, err)
	}
	var o struct {
		Seconds json.Number `json:"seconds"`
		Nanos   int64       `json:"nanos"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Seconds != "" {
		f, err := o.Seconds.Float64()
		if err != nil {
			return 0, false
		}
		return secondsToDuration(f+float64(o.Nanos)/1e9, nil)
	}
	return 0, false
}

// maxRetryDelay caps a server-suggested delay; beyond it the number is
// nonsense and the poller's own bounds apply anyway.
const maxRetryDelay = 24 * time.Hour

func secondsToDuration(f float64, err error) (time.Duration, bool) {
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f > maxRetryDelay.Seconds() {
		return maxRetryDelay, true
	}
	return time.Duration(f * float64(time.Second)), true
}

// ParseRetryAfter reads Retry-After as delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3). A date in the past means "now": zero delay; absurd
// values are capped instead of overflowing. Every source uses it.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		return secondsToDuration(n, nil)
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		d = 0
	}
	if d > maxRetryDelay {
		d = maxRetryDelay
	}
	return d, true
}

// secretPatterns find credentials that a proxy or a server might echo back:
// Authorization headers, bearer tokens, Databricks personal access tokens.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(authorization|proxy-authorization|x-databricks-authorization)\s*[:=]\s*"?((?:bearer|basic|token)\s+)?[^"\r\n,}]*`),
	regexp.MustCompile(`(?i)(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}`),
	regexp.MustCompile(`(?i)dapi[A-Za-z0-9._-]{8,}`),
	regexp.MustCompile(`(?i)(token|password|secret)("?\s*[:=]\s*"?)[^"\s&,}]+`),
}

var (
	// URL userinfo: scheme://user:password@host (a token pasted into --host).
	urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s"']+@`)
	// Query values whose name looks secret: ?sig=…, &api_key=…, &code=….
	secretQuery = regexp.MustCompile(`(?i)([?&;][a-z0-9_.-]*(?:token|secret|password|passwd|pwd|key|sig|signature|credential|auth|code)=)[^&#\s"']+`)
)

// RedactURLs removes the credentials a URL can carry: its userinfo
// (https://user:TOKEN@host) and query values whose name looks secret
// (?token=…, &sig=…). Redact includes it; validation messages, which
// quote what the operator typed, use it alone.
func RedactURLs(s string) string {
	s = urlUserinfo.ReplaceAllString(s, "${1}[REDACTED]@")
	return secretQuery.ReplaceAllString(s, "${1}[REDACTED]")
}

// RedactToken removes a known secret (the configured token) from s, then
// anything else that looks like a credential (Redact). Every place that
// writes text an operator or a log will see goes through one of the two.
func RedactToken(s, token string) string {
	if len(token) >= 4 {
		s = strings.ReplaceAll(s, token, "<redacted>")
	}
	return Redact(s)
}

// Redact replaces credentials in s with "[REDACTED]", keeping the names
// around them (a header's name and scheme): authorization headers, bearer
// and basic credentials, Databricks tokens, token= /
// password= / secret= values, the userinfo of a URL
// (https://user:TOKEN@host) and query values whose name looks secret
// (?sig=…, &api_key=…).
func Redact(s string) string {
	for i, re := range secretPatterns {
		switch i {
		case 0:
			// The header's name and scheme stay: they say what was
			// refused; only the value is a secret.
			s = re.ReplaceAllString(s, "${1}: ${2}[REDACTED]")
		case 1:
			s = re.ReplaceAllString(s, "${1} [REDACTED]")
		case 3:
			s = re.ReplaceAllString(s, "${1}${2}[REDACTED]")
		default:
			s = re.ReplaceAllString(s, "[REDACTED]")
		}
	}
	return RedactURLs(s)
}

// SanitizeBody keeps at most MaxErrorBody bytes of an error body as valid
// UTF-8 text without control characters (newlines and tabs become spaces)
// and with credentials redacted.
func SanitizeBody(body []byte) string {
	return sanitizeText(string(body), MaxErrorBody)
}

// sanitizeText redacts first (a token cut in half by truncation would not
// match any more), then cleans and truncates to at most max bytes.
func sanitizeText(s string, max int) string {
	if s == "" {
		return ""
	}
	// Bound the work on huge bodies before the regexps run; keep a margin so
	// a secret straddling the cut is still recognised.
	if len(s) > 4*max+256 {
		s = s[:4*max+256]
	}
	// The one sanitiser (textfmt): escape sequences, controls, C1, bidi
	// and invalid UTF-8 are made visible and harmless, on one line.
	s = textfmt.Line(Redact(s))
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) { // never cut a rune in half
			s = s[:len(s)-1]
		}
	}
	return strings.TrimSpace(s)
}

// messageFromText makes a one-line message of a plain-text body; HTML error
// pages (load balancers) say nothing a status text does not.
func messageFromText(clean string) string {
	if looksHTML(clean) {
		// A gateway's page: its title says what happened ("502 Bad Gateway").
		return OneLine(clean, maxErrorMessage)
	}
	if clean == "" || strings.HasPrefix(clean, "<") {
		return ""
	}
	if len(clean) > maxErrorMessage {
		clean = clean[:maxErrorMessage]
		for !utf8.ValidString(clean) {
			clean = clean[:len(clean)-1]
		}
	}
	return clean
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
