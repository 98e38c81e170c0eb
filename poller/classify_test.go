package poller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

var (
	safeCall   = retry.Call{Name: CallStatus, Safe: true, OpID: "01ef0000-0000-4000-8000-000000000001"}
	unsafeCall = retry.Call{Name: "ExecuteStatement", Safe: false}
)

// statusErr makes one real status call against a server that answers the
// given fault, and returns the error net/http and the source produced.
func statusErr(t *testing.T, f fault) error {
	t.Helper()
	s := newOpServer(t)
	s.setFault(func(request) fault { return f })
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	_, err := src.Status(context.Background(), sources.Ref{StatementID: "x"})
	if err == nil {
		t.Fatal("want an error")
	}
	return err
}

func realReset(t *testing.T) error { return statusErr(t, fault{reset: true}) }

// realStaleEOF: the first request leaves a pooled keep-alive connection;
// the server drops it without answering when the next request arrives.
func realStaleEOF(t *testing.T) error {
	s := newOpServer(t)
	s.add(srvOp{ID: "x", State: "RUNNING", Open: true})
	s.setFault(func(r request) fault { return fault{drop: r.NthOn == 2} })
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	if _, err := src.Status(context.Background(), sources.Ref{StatementID: "x"}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	_, err := src.Status(context.Background(), sources.Ref{StatementID: "x"})
	if err == nil || s.connCount() != 1 {
		t.Fatalf("want an error on the reused connection, got %v (conns %d)", err, s.connCount())
	}
	return err
}

func realRefused(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	_, err = (&http.Client{Transport: tr}).Post("http://"+addr+"/status", "application/json", strings.NewReader("{}"))
	if err == nil {
		t.Fatal("want refused")
	}
	return err
}

func realDialTimeout(t *testing.T) error {
	s := newOpServer(t)
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: time.Nanosecond}).DialContext}
	defer tr.CloseIdleConnections()
	_, err := (&http.Client{Transport: tr}).Post(s.ts.URL+"/status", "application/json", strings.NewReader("{}"))
	if err == nil {
		t.Fatal("want a dial timeout")
	}
	return err
}

func realReadTimeout(t *testing.T) error {
	s := newOpServer(t)
	s.setFault(func(request) fault { return fault{hang: true} })
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	_, err := (&http.Client{Transport: tr, Timeout: 50 * time.Millisecond}).Post(s.ts.URL+"/status", "application/json", strings.NewReader("{}"))
	if err == nil {
		t.Fatal("want a read timeout")
	}
	return err
}

// realThrift503 is the stock Thrift THttpClient's error for a 503.
func realThrift503(t *testing.T) error {
	s := newOpServer(t)
	s.setFault(func(request) fault { return fault{status: 503} })
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	tt, err := thrift.NewTHttpClientWithOptions(s.ts.URL+"/sql/1.0/warehouses/w", thrift.THttpClientOptions{Client: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	defer tt.Close()
	_, _ = tt.Write([]byte{0x80, 0x01, 0, 1})
	err = tt.Flush(context.Background())
	if err == nil {
		t.Fatal("want an error")
	}
	return err
}

func httpFault(status int, code string, hdr map[string]string) func(t *testing.T) error {
	return func(t *testing.T) error {
		f := fault{status: status, header: hdr}
		if code != "" {
			f.body = errBody(code, "message for "+code, "6f1c2a4e-1111-4000-8000-00000000abcd")
		}
		return statusErr(t, f)
	}
}

func TestClassifyTable(t *testing.T) {
	type want struct {
		retry bool
		kind  model.ErrorKind
		fresh bool
	}
	cases := []struct {
		name         string
		err          func(t *testing.T) error
		safe, unsafe want
		wait         time.Duration // minimum server hint expected (0: none)
	}{
		{"reset", realReset, want{true, model.KindTransport, true}, want{false, model.KindTransport, true}, 0},
		{"EOF on reused keep-alive", realStaleEOF, want{true, model.KindTransport, true}, want{false, model.KindTransport, true}, 0},
		{"broken pipe", func(*testing.T) error {
			// EPIPE cannot be provoked deterministically over loopback;
			// this is the exact shape net/http returns for it.
			return fmt.Errorf("Post \"http://x\": %w", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)})
		}, want{true, model.KindTransport, true}, want{false, model.KindTransport, true}, 0},
		{"refused", realRefused, want{true, model.KindTransport, true}, want{true, model.KindTransport, true}, 0},
		{"dial timeout", realDialTimeout, want{true, model.KindTransport, true}, want{true, model.KindTransport, true}, 0},
		{"read timeout", realReadTimeout, want{true, model.KindTransport, true}, want{false, model.KindTransport, true}, 0},
		{"thrift HTTP Response code: 503", realThrift503, want{true, model.KindUnavailable, false}, want{true, model.KindUnavailable, false}, 0},
		{"429 REQUEST_LIMIT_EXCEEDED Retry-After 2", httpFault(429, "REQUEST_LIMIT_EXCEEDED", map[string]string{"Retry-After": "2"}), want{true, model.KindThrottled, false}, want{true, model.KindThrottled, false}, 2 * time.Second},
		{"429 TOO_MANY_REQUESTS HTTP-date", func(t *testing.T) error {
			date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
			return httpFault(429, "TOO_MANY_REQUESTS", map[string]string{"Retry-After": date})(t)
			// Whole seconds: the hint is in (2s, 3s], checked as 2s ± 1s.
		}, want{true, model.KindThrottled, false}, want{true, model.KindThrottled, false}, 2 * time.Second},
		{"429 no body", httpFault(429, "", nil), want{true, model.KindThrottled, false}, want{true, model.KindThrottled, false}, 0},
		{"503 TEMPORARILY_UNAVAILABLE", httpFault(503, "TEMPORARILY_UNAVAILABLE", nil), want{true, model.KindUnavailable, false}, want{true, model.KindUnavailable, false}, 0},
		{"503 WORKSPACE_TEMPORARILY_UNAVAILABLE", httpFault(503, "WORKSPACE_TEMPORARILY_UNAVAILABLE", nil), want{true, model.KindUnavailable, false}, want{true, model.KindUnavailable, false}, 0},
		{"503 no body Retry-After 1", httpFault(503, "", map[string]string{"Retry-After": "1"}), want{true, model.KindUnavailable, false}, want{true, model.KindUnavailable, false}, time.Second},
		{"500", httpFault(500, "INTERNAL_ERROR", nil), want{true, model.KindUnavailable, false}, want{false, model.KindUnavailable, false}, 0},
		{"502", httpFault(502, "", nil), want{true, model.KindUnavailable, false}, want{false, model.KindUnavailable, false}, 0},
		{"504 Retry-After 1", httpFault(504, "", map[string]string{"Retry-After": "1"}), want{true, model.KindUnavailable, false}, want{false, model.KindUnavailable, false}, time.Second},
		{"429 RESOURCE_EXHAUSTED", httpFault(429, "RESOURCE_EXHAUSTED", map[string]string{"Retry-After": "1"}), want{false, model.KindPermanent, false}, want{false, model.KindPermanent, false}, 0},
		{"503 RESOURCE_EXHAUSTED", httpFault(503, "RESOURCE_EXHAUSTED", nil), want{false, model.KindPermanent, false}, want{false, model.KindPermanent, false}, 0},
		{"400 QUOTA_EXCEEDED", httpFault(400, "QUOTA_EXCEEDED", nil), want{false, model.KindPermanent, false}, want{false, model.KindPermanent, false}, 0},
		{"400 INVALID_PARAMETER_VALUE", httpFault(400, "INVALID_PARAMETER_VALUE", nil), want{false, model.KindPermanent, false}, want{false, model.KindPermanent, false}, 0},
		{"401", httpFault(401, "UNAUTHENTICATED", nil), want{false, model.KindPermanent, false}, want{false, model.KindPermanent, false}, 0},
		{"404 RESOURCE_DOES_NOT_EXIST", httpFault(404, "RESOURCE_DOES_NOT_EXIST", nil), want{false, model.KindPermanent, false}, want{false, model.KindPermanent, false}, 0},
		{"handle gone", func(*testing.T) error { return fmt.Errorf("CloseOperation: %w", sources.ErrHandleGone) }, want{false, model.KindPermanent, false}, want{false, model.KindPermanent, false}, 0},
		{"server error", func(*testing.T) error {
			return &sources.ServerError{Call: "GetOperationStatus", StatusCode: 3, SQLState: "42000", Message: "bad"}
		}, want{false, model.KindPermanent, false}, want{false, model.KindPermanent, false}, 0},
		{"context canceled", func(t *testing.T) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			s := newOpServer(t)
			src := newHTTPSource(s)
			defer src.CloseIdleConnections()
			_, err := src.Status(ctx, sources.Ref{StatementID: "x"})
			return err
		}, want{false, model.KindCanceled, false}, want{false, model.KindCanceled, false}, 0},
		{"deadline exceeded", func(*testing.T) error { return fmt.Errorf("wrapped: %w", context.DeadlineExceeded) },
			want{false, model.KindCanceled, false}, want{false, model.KindCanceled, false}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.err(t)
			for _, k := range []struct {
				call retry.Call
				w    want
			}{{safeCall, c.safe}, {unsafeCall, c.unsafe}} {
				d := retry.Classify(k.call, err)
				if d.Retry != k.w.retry || d.Kind != k.w.kind || (d.Retry && d.FreshConn != k.w.fresh) {
					t.Errorf("%s safe=%v: retry.Classify(%q) = %+v, want retry=%v kind=%s fresh=%v",
						c.name, k.call.Safe, err, d, k.w.retry, k.w.kind, k.w.fresh)
				}
				if d.Reason == "" {
					t.Errorf("%s: empty reason", c.name)
				}
				if c.wait > 0 && (d.Wait < c.wait-time.Second || d.Wait > c.wait+time.Second) {
					t.Errorf("%s: wait %s, want about %s", c.name, d.Wait, c.wait)
				}
			}
		})
	}
}

func TestClassifyTimeoutCostsMore(t *testing.T) {
	if d := retry.Classify(safeCall, realReadTimeout(t)); !d.Timeout {
		t.Errorf("read timeout not marked Timeout: %+v", d)
	}
	if d := retry.Classify(safeCall, realReset(t)); d.Timeout {
		t.Errorf("reset marked Timeout: %+v", d)
	}
}

func TestClassifyTypeLostInText(t *testing.T) {
	// Thrift and other wrappers sometimes keep only the text.
	for msg, want := range map[string]bool{
		"thrift: read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer": true,
		"Post \"http://h/x\": http: server closed idle connection":                  true,
		"something else entirely": false,
	} {
		if d := retry.Classify(safeCall, errors.New(msg)); d.Retry != want {
			t.Errorf("%q: retry=%v want %v", msg, d.Retry, want)
		}
	}
	if d := retry.Classify(unsafeCall, io.ErrUnexpectedEOF); d.Retry {
		t.Errorf("unexpected EOF retried for an unsafe call")
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{"HTTP Response code: 503", "HTTP Response code: 99999", "HTTP Response code: ", "EOF",
		"connection reset by peer", "HTTP Response code: 429x", ""} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, msg string, safe bool) {
		d := retry.Classify(retry.Call{Name: "X", Safe: safe}, errors.New(msg))
		if d.Kind == "" || d.Reason == "" {
			t.Fatalf("incomplete decision %+v for %q", d, msg)
		}
		if d.Retry && d.Kind == model.KindPermanent {
			t.Fatalf("retrying a permanent error: %+v", d)
		}
		_ = retry.ErrorInfoOf(errors.New(msg))
	})
}

func FuzzParseErrorBody(f *testing.F) {
	f.Add(429, errBody("RESOURCE_EXHAUSTED", "full", "abc"), "1")
	f.Add(503, `{"error_code":"TEMPORARILY_UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retry_delay":"2s"}]}`, "")
	f.Add(502, `<html>bad gateway</html>`, "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add(400, `{"error_code":`, "-1")
	f.Fuzz(func(t *testing.T, status int, body, retryAfter string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		he := parseHTTPError("X", status, h, []byte(body), time.Now())
		if he.RetryAfter < 0 {
			t.Fatalf("negative wait %s", he.RetryAfter)
		}
		d := retry.Classify(safeCall, he)
		if d.Kind == "" {
			t.Fatalf("no kind for %+v", he)
		}
		if he.ErrorCode == "RESOURCE_EXHAUSTED" && d.Retry {
			t.Fatal("RESOURCE_EXHAUSTED retried")
		}
	})
}

func BenchmarkClassify(b *testing.B) {
	errs := []error{
		&sources.HTTPError{Call: "X", StatusCode: 429, ErrorCode: "RESOURCE_EXHAUSTED"},
		&sources.HTTPError{Call: "X", StatusCode: 503, RetryAfter: time.Second},
		fmt.Errorf("Post: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}),
		fmt.Errorf("Post: %w", io.EOF),
		errors.New("HTTP Response code: 502"),
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = retry.Classify(safeCall, errs[i%len(errs)])
	}
}
