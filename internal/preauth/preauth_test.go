package preauth

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// start serves h behind the guard on loopback; handlers authenticate a
// request carrying "Authorization: ok".
func start(t *testing.T, timeout time.Duration, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "ok" {
			MarkAuthenticated(r.Context())
		}
		h(w, r)
	}), IdleTimeout: time.Hour, ReadTimeout: time.Hour}
	Track(srv)
	go func() { _ = srv.Serve(Listener{Listener: ln, Timeout: timeout}) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// closedWithin reads from c until the server closes it, failing past
// limit (a generous bound: it only proves the server acts at all).
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the server did not close the connection within %v: %v", limit, err)
	}
}

func get(t *testing.T, c net.Conn, br *bufio.Reader, auth string) int {
	t.Helper()
	req := "GET / HTTP/1.1\r\nHost: x\r\n"
	if auth != "" {
		req += "Authorization: " + auth + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestSilentAndUnauthenticatedConnectionsAreClosed: a silent socket and
// one idle after an unauthenticated request are closed at the bound,
// though the server's own idle timeout is an hour.
func TestSilentAndUnauthenticatedConnectionsAreClosed(t *testing.T) {
	addr := start(t, 200*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {})
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	closedWithin(t, silent, time.Minute)

	probed, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer probed.Close()
	get(t, probed, bufio.NewReader(probed), "")
	closedWithin(t, probed, time.Minute)
}

// TestAuthenticatedConnectionOutlivesTheBound: after an authenticated
// request the connection idles past the bound and still serves; a
// handler running past the bound before any authentication is not
// canceled.
func TestAuthenticatedConnectionOutlivesTheBound(t *testing.T) {
	const bound = 100 * time.Millisecond
	addr := start(t, bound, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			_, _ = io.ReadAll(r.Body)
			select {
			case <-r.Context().Done():
				_, _ = io.WriteString(w, "canceled")
			case <-time.After(10 * bound):
				_, _ = io.WriteString(w, "done")
			}
		}
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if code := get(t, c, br, "ok"); code != http.StatusOK {
		t.Fatalf("authenticated request: %d", code)
	}
	// Idle for many bounds: an unauthenticated connection would be gone.
	time.Sleep(10 * bound)
	if code := get(t, c, br, ""); code != http.StatusOK {
		t.Fatalf("after idling: %d", code)
	}

	// An unauthenticated request whose handler runs past the bound (a
	// proxied call waiting on the server): net/http's read pending under
	// the handler must not time out, for that would cancel the request.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write([]byte("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(got) != "done" {
		t.Fatalf("a handler running past the bound before authentication: %q", got)
	}
}

func TestOfFindsTheGuardUnderAWrapper(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	g := &Conn{Conn: a}
	if Of(wrapped{g}) != g || Of(b) != nil {
		t.Fatal("Of did not find the guard")
	}
	MarkAuthenticated(context.Background()) // no guard: no panic
}

type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }
