package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// startSim starts a quiet simulator (no workload): only what the test's
// clients execute.
func startSim(t testing.TB, faults string) *sim.Server {
	t.Helper()
	return startSimWith(t, sim.Options{Scenario: sim.ScenarioQuiet, Faults: faults, Seed: 7})
}

// startSimWith starts a simulator with o, closed when the test ends.
func startSimWith(t testing.TB, o sim.Options) *sim.Server {
	t.Helper()
	s, err := sim.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// startProxy starts a proxy in front of upstream on free loopback ports.
func startProxy(t testing.TB, upstream string, o Options) *Server {
	t.Helper()
	o.Upstream = upstream
	if o.Tick == 0 {
		o.Tick = 50 * time.Millisecond
	}
	if o.CloseDefer == 0 {
		o.CloseDefer = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	p, err := Start(context.Background(), o, ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("proxy close: %v", err)
		}
	})
	return p
}

// testLogger logs the proxy's records to the test's log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// fastPolicy keeps the project's policy but with short backoff, so tests
// do not wait seconds between attempts.
func fastPolicy() retry.PolicyOptions {
	return retry.PolicyOptions{Base: 5 * time.Millisecond, Cap: 20 * time.Millisecond, AttemptTimeout: 2 * time.Second}
}

// client is a Thrift client as an outside application: its own
// User-Agent, the simulator's token, pointed at host.
func client(t *testing.T, host, token, ua string) *thrift.Client {
	t.Helper()
	c, err := thrift.NewClient(thrift.Options{Host: host, Token: token, UserAgent: ua, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// execute opens a session on warehouse wh with c and runs sql in it,
// leaving the operation for the test to follow or close.
func execute(ctx context.Context, t *testing.T, c *thrift.Client, wh, sql string) *thrift.Operation {
	t.Helper()
	sess, err := c.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, sql, false)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func adminGet(t *testing.T, s *Server, path string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.AdminURL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("admin %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

// waitFor polls cond (reading state over HTTP, never sleeping a fixed
// time as the assertion) until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
