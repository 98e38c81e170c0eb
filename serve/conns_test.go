package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources/sim"
)

const testRead, testAct = "read-token-0123456789", "act-token-0123456789"

// startServe runs a serve on loopback over a quiet simulated workspace
// until the test ends.
func startServe(t *testing.T, o Options) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCounters()
	fleet := poller.NewFleet(time.Hour, workspace(t, ctx, "live", srv.URL(), srv.Token(), c))
	o.Listen, o.Fleet, o.Counters = "127.0.0.1:0", fleet, c
	s, err := New(o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { _ = fleet.Run(ctx); done <- struct{}{} }()
	go func() { _ = s.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done; _ = srv.Close(context.Background()) })
	return s
}

// rawGet sends one keep-alive GET on c and reads the answer's status.
func rawGet(c net.Conn, br *bufio.Reader, path, auth string) (int, error) {
	req := "GET " + path + " HTTP/1.1\r\nHost: serve\r\n"
	if auth != "" {
		req += "Authorization: " + auth + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = bufio.NewReader(resp.Body).WriteTo(discard{})
	return resp.StatusCode, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestServeBoundsConnectionsBeforeAuth: 1,000 idle sockets (silent, idle
// after a probe, idle after a 401) cost serve little: real clients are
// answered while they are open, serve closes every one of them once they
// have idled past the pre-authentication bound, and an authenticated
// connection outlives that bound.
func TestServeBoundsConnectionsBeforeAuth(t *testing.T) {
	const preAuth = time.Second
	s := startServe(t, Options{Token: testRead, ActToken: testAct, PreAuthTimeout: preAuth})
	addr := strings.TrimPrefix(s.URL(), "http://")

	authed, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer authed.Close()
	abr := bufio.NewReader(authed)
	if code, err := rawGet(authed, abr, "/api/v1/health", "Bearer "+testRead); err != nil || code != http.StatusOK {
		t.Fatalf("authenticated request: %d %v", code, err)
	}
	authedAt := time.Now()

	const idle = 1000
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	for i := range idle {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
		conns = append(conns, c)
		switch i % 3 {
		case 1: // a probe, then nothing
			if code, err := rawGet(c, bufio.NewReader(c), "/healthz", ""); err != nil || code != http.StatusOK {
				t.Fatalf("socket %d /healthz: %d %v", i, code, err)
			}
		case 2: // refused, then nothing
			if code, err := rawGet(c, bufio.NewReader(c), "/metrics", "Bearer wrong-token-0123456789"); err != nil || code != http.StatusUnauthorized {
				t.Fatalf("socket %d wrong token: %d %v", i, code, err)
			}
		}
	}
	opened := time.Since(start)

	// A real client is answered while the sockets are open.
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api/v1/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+testRead)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("a real client beside %d idle sockets: %v", idle, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a real client beside %d idle sockets: HTTP %d", idle, resp.StatusCode)
	}

	// serve closes every idle socket: each read ends (EOF or reset) well
	// before the generous deadline, never by it.
	deadline := time.Now().Add(opened + 30*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(deadline)
			_, err := c.Read(make([]byte, 1))
			if errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				open++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if open > 0 {
		t.Errorf("%d of %d unauthenticated idle sockets still open after %v (pre-authentication bound %v)", open, idle, time.Since(start), preAuth)
	}

	// The authenticated connection idles three times the bound, serve
	// keeping it open all that time, and still serves.
	_ = authed.SetReadDeadline(authedAt.Add(3 * preAuth))
	if n, err := authed.Read(make([]byte, 1)); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("authenticated connection idle %v: read %d, %v; want it kept open (idle timeout %v)", time.Since(authedAt), n, err, AuthIdleTimeout)
	}
	_ = authed.SetReadDeadline(time.Time{})
	if code, err := rawGet(authed, abr, "/api/v1/health", "Bearer "+testRead); err != nil || code != http.StatusOK {
		t.Fatalf("authenticated connection after %v idle: %d %v; want it kept (idle timeout %v)", time.Since(start), code, err, AuthIdleTimeout)
	}
}

// TestServeAuthIsStrict: the Bearer scheme is required (a bare token, or
// the token as basic-auth credentials, is refused), and tokens shorter
// than MinTokenLength are refused at start.
func TestServeAuthIsStrict(t *testing.T) {
	s := startServe(t, Options{Token: testRead, ActToken: testAct})
	for auth, want := range map[string]int{
		"Bearer " + testRead:       http.StatusOK,
		"bearer " + testRead:       http.StatusOK,
		testRead:                   http.StatusUnauthorized,
		"Token " + testRead:        http.StatusUnauthorized,
		"Bearer":                   http.StatusUnauthorized,
		"Bearer ":                  http.StatusUnauthorized,
		"Basic " + testRead:        http.StatusUnauthorized,
		"Bearer " + testRead + "x": http.StatusUnauthorized,
	} {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api/v1/health", nil)
		req.Header["Authorization"] = []string{auth}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Authorization %q: HTTP %d, want %d", auth, resp.StatusCode, want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	for _, o := range []Options{{Token: "short-tok"}, {Token: testRead, ActToken: strings.Repeat("a", MinTokenLength-1)}} {
		o.Fleet = poller.NewFleet(time.Hour)
		o.Listen = "127.0.0.1:0"
		_, err := New(o)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at least %d", MinTokenLength)) {
			t.Errorf("tokens %d and %d characters long: %v, want a refusal naming the minimum", len(o.Token), len(o.ActToken), err)
		}
		if err != nil && strings.Contains(err.Error(), o.Token) && o.Token != "" {
			t.Errorf("the refusal shows the token: %v", err)
		}
	}
}
