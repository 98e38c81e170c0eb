package sim

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// databricks-sdk-go (used by sdk_test.go) starts opencensus's global
	// worker at init; it is not ours.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// startSim starts a quiet simulator (unless o says otherwise) and closes it
// when the test ends.
func startSim(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Scenario == "" {
		o.Scenario = ScenarioQuiet
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// testLog writes the simulator's log lines into the test's log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// httpClient is a plain net/http client whose idle connections are closed
// when the test ends (goleak would see their read loops otherwise).
func httpClient(t testing.TB) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// do sends one authenticated request (token "" = none).
func do(t testing.TB, c *http.Client, method, url, token, ua string, body string) (reply, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func mustDo(t testing.TB, c *http.Client, method, url, token, ua, body string) reply {
	t.Helper()
	r, err := do(t, c, method, url, token, ua, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

func getTruth(t testing.TB, s *Server) Truth {
	var tr Truth
	mustDo(t, httpClient(t), "GET", s.URL()+"/sim/v1/truth", s.Token(), "", "").json(t, &tr)
	return tr
}

func getStats(t testing.TB, s *Server) Stats {
	var st Stats
	mustDo(t, httpClient(t), "GET", s.URL()+"/sim/v1/stats", s.Token(), "", "").json(t, &st)
	return st
}

// eventually polls cond every 20 ms until it holds or the deadline passes:
// the condition is an observable server state, not a sleep.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The simulator reports through its Options.Logger, with attributes: the
// serving line at info names the scenario and the warehouses.
func TestLogsThroughItsLogger(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	h := slog.NewJSONHandler(lockedWriter{&mu, &buf}, nil)
	startSim(t, Options{Logger: slog.New(h), Warehouses: 2})
	mu.Lock()
	defer mu.Unlock()
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(buf.String(), "\n", 2)[0]), &rec); err != nil {
		t.Fatalf("the first log line is not one JSON record: %v\n%s", err, buf.String())
	}
	if rec["level"] != "INFO" || rec["msg"] != "sim: serving" || rec["scenario"] != string(ScenarioQuiet) || rec["warehouses"] != float64(2) {
		t.Errorf("first record %v; want INFO sim: serving with scenario and warehouses", rec)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
