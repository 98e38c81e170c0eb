package sources

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var now = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)

const reqID = "5d3c8c1e-6a2b-4f7e-9d10-7b2a1c0e4f99"

func TestParseHTTPError(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		want       HTTPError // Call, StatusCode and Body are not compared here
		wantInBody string
	}{
		{
			name:   "resource exhausted with request info",
			status: 429,
			body: `{"error_code":"RESOURCE_EXHAUSTED","message":"Vector search endpoint is full",
			  "details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"` + reqID + `","serving_data":""}]}`,
			want: HTTPError{ErrorCode: "RESOURCE_EXHAUSTED", Message: "Vector search endpoint is full", RequestID: reqID},
		},
		{
			name:   "retry info as a duration string",
			status: 429,
			body: `{"error_code":"REQUEST_LIMIT_EXCEEDED","message":"rate","details":[
			  {"@type":"type.googleapis.com/google.rpc.RetryInfo","retry_delay":"1.5s"},
			  {"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"` + reqID + `"}]}`,
			want: HTTPError{ErrorCode: "REQUEST_LIMIT_EXCEEDED", Message: "rate", RequestID: reqID, RetryAfter: 1500 * time.Millisecond, HasRetryAfter: true},
		},
		{
			name:   "retry info as an object",
			status: 503,
			body:   `{"error_code":"TEMPORARILY_UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retry_delay":{"seconds":2,"nanos":250000000}}]}`,
			want:   HTTPError{ErrorCode: "TEMPORARILY_UNAVAILABLE", RetryAfter: 2250 * time.Millisecond, HasRetryAfter: true},
		},
		{
			name:   "Retry-After seconds wins over RetryInfo",
			status: 429,
			header: http.Header{"Retry-After": {"3"}},
			body:   `{"error_code":"TOO_MANY_REQUESTS","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retry_delay":"9s"}]}`,
			want:   HTTPError{ErrorCode: "TOO_MANY_REQUESTS", RetryAfter: 3 * time.Second, HasRetryAfter: true},
		},
		{
			name:   "Retry-After HTTP date relative to now",
			status: 503,
			header: http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}},
			want:   HTTPError{RetryAfter: 90 * time.Second, HasRetryAfter: true},
		},
		{
			name:   "Retry-After date in the past is zero, still present",
			status: 503,
			header: http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}},
			want:   HTTPError{RetryAfter: 0, HasRetryAfter: true},
		},
		{
			name:   "Retry-After garbage is absent",
			status: 429,
			header: http.Header{"Retry-After": {"soon"}},
			want:   HTTPError{},
		},
		{
			name:   "x-request-id fallback, no body",
			status: 503,
			header: http.Header{"X-Request-Id": {reqID}},
			want:   HTTPError{RequestID: reqID},
		},
		{
			name:   "body request id wins over header",
			status: 404,
			header: http.Header{"X-Request-Id": {"header-id"}},
			body:   `{"error_code":"RESOURCE_DOES_NOT_EXIST","message":"no such statement","details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"body-id"}]}`,
			want:   HTTPError{ErrorCode: "RESOURCE_DOES_NOT_EXIST", Message: "no such statement", RequestID: "body-id"},
		},
		{
			name:   "legacy error field",
			status: 401,
			body:   `{"error":"Invalid access token."}`,
			want:   HTTPError{Message: "Invalid access token."},
		},
		{
			name:   "odd field types cost only those fields",
			status: 400,
			body:   `{"error_code":400,"message":"bad","details":{"not":"a list"}}`,
			want:   HTTPError{ErrorCode: "400", Message: "bad"},
		},
		{
			name:       "plain text keeps a one-line message",
			status:     502,
			body:       "upstream connect error or disconnect/reset before headers\nreset reason: connection termination",
			want:       HTTPError{Message: "upstream connect error or disconnect/reset before headers reset reason: connection termination"},
			wantInBody: "reset reason",
		},
		{
			name:       "HTML page: summarised to its text, body kept",
			status:     504,
			body:       "<html><body><h1>504 Gateway Time-out</h1></body></html>",
			want:       HTTPError{Message: "HTML page: 504 Gateway Time-out"},
			wantInBody: "504 Gateway Time-out",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			got := ParseHTTPErrorAt(now, "GetStatement", tt.status, h, []byte(tt.body))
			if got.Call != "GetStatement" || got.StatusCode != tt.status {
				t.Fatalf("call/status %q %d", got.Call, got.StatusCode)
			}
			if got.ErrorCode != tt.want.ErrorCode || got.Message != tt.want.Message || got.RequestID != tt.want.RequestID ||
				got.RetryAfter != tt.want.RetryAfter || got.HasRetryAfter != tt.want.HasRetryAfter {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
			if tt.wantInBody != "" && !strings.Contains(got.Body, tt.wantInBody) {
				t.Fatalf("body %q lacks %q", got.Body, tt.wantInBody)
			}
		})
	}
}

func TestParseHTTPErrorNeverLeaksCredentials(t *testing.T) {
	const pat = "dapi0123456789abcdef0123456789abcdef"
	bodies := []string{
		"Authorization: Bearer " + pat + "\r\nHost: x",
		`{"message":"bad token ` + pat + `"}`,
		`{"error_code":"X","message":"headers {\"authorization\": \"Basic dXNlcjpwYXNz\"}"}`,
		"echo: token=" + pat,
		strings.Repeat("x", 500) + " Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
	}
	for _, b := range bodies {
		e := ParseHTTPErrorAt(now, "UpsertDataVectorIndex", 400, http.Header{}, []byte(b))
		out := e.Error() + "|" + e.Body + "|" + e.Message
		for _, secret := range []string{pat, "dXNlcjpwYXNz", "eyJhbGciOiJIUzI1NiJ9"} {
			if strings.Contains(out, secret) {
				t.Errorf("secret %q survived in %q", secret, out)
			}
		}
	}
}

func TestSanitizeBodyBounds(t *testing.T) {
	long := strings.Repeat("é", 1000) + "\x00\x1b[31m"
	s := SanitizeBody([]byte(long))
	if len(s) > MaxErrorBody || !utf8.ValidString(s) {
		t.Fatalf("len %d valid %v", len(s), utf8.ValidString(s))
	}
	s = SanitizeBody([]byte("a\x00b\x1b[31mc\xffd"))
	if strings.ContainsAny(s, "\x00\x1b") || !utf8.ValidString(s) {
		t.Fatalf("control bytes kept: %q", s)
	}
	if SanitizeBody(nil) != "" {
		t.Fatal("nil body")
	}
}

func TestHTTPErrorIsAnError(t *testing.T) {
	e := ParseHTTPErrorAt(now, "GetOperationStatus", 429, http.Header{"Retry-After": {"1"}},
		[]byte(`{"error_code":"RESOURCE_EXHAUSTED","message":"full","details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"r-1"}]}`))
	var err error = e
	var he *HTTPError
	if !errors.As(err, &he) {
		t.Fatal("not an *HTTPError")
	}
	want := "GetOperationStatus: HTTP 429 RESOURCE_EXHAUSTED: full (request_id r-1)"
	if err.Error() != want {
		t.Fatalf("%q, want %q", err.Error(), want)
	}
}

func FuzzParseHTTPError(f *testing.F) {
	f.Add(429, "2", "", []byte(`{"error_code":"RESOURCE_EXHAUSTED","message":"m","details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"r"}]}`))
	f.Add(429, "Sun, 29 Nov 2026 20:01:00 GMT", "rid", []byte(`{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retry_delay":"1.5s"}]}`))
	f.Add(503, "", "", []byte{})
	f.Add(502, "-1", "", []byte("<html>bad gateway</html>"))
	f.Add(400, "1e309", "", []byte(`{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retry_delay":{"seconds":"9e99","nanos":-1}}]}`))
	f.Add(401, "", "", []byte("Authorization: Bearer dapiabcdefabcdefabcdef\xff\x00"))
	f.Fuzz(func(t *testing.T, status int, retryAfter, xRequestID string, body []byte) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-Request-Id", xRequestID)
		e := ParseHTTPErrorAt(now, "Call", status, h, body)
		if e == nil {
			t.Fatal("nil error")
		}
		if len(e.Body) > MaxErrorBody || !utf8.ValidString(e.Body) || !utf8.ValidString(e.Message) {
			t.Fatalf("body %d bytes, valid %v/%v", len(e.Body), utf8.ValidString(e.Body), utf8.ValidString(e.Message))
		}
		if e.RetryAfter < 0 || e.RetryAfter > maxRetryDelay || (!e.HasRetryAfter && e.RetryAfter != 0) {
			t.Fatalf("retry after %v (has %v)", e.RetryAfter, e.HasRetryAfter)
		}
		if strings.ContainsAny(e.Body+e.Message+e.RequestID+e.ErrorCode, "\x00\n\r") {
			t.Fatal("control characters kept")
		}
		_ = e.Error()
	})
}
