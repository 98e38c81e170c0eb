package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/sim"
)

// longRuns reports whether the slow, figure-producing variants run.
func longRuns() bool { return os.Getenv("DBXTOP_LONG") == "1" }

// startSim starts a quiet simulator on loopback and stops it when the test
// ends. faults is a --faults spec ("" for none).
func startSim(t testing.TB, faults string) *sim.Server {
	t.Helper()
	return startSimOpts(t, sim.Options{Faults: faults})
}

func startSimOpts(t testing.TB, o sim.Options) *sim.Server {
	t.Helper()
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.Token == "" {
		o.Token = "conformance-secret-token"
	}
	if o.Scenario == "" {
		o.Scenario = "quiet"
	}
	if o.Seed == 0 {
		o.Seed = 7
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := sim.Start(ctx, o)
	if err != nil {
		t.Fatalf("sim.Start(%+v): %v", redactOpts(o), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("sim close: %v", err)
		}
	})
	return s
}

func redactOpts(o sim.Options) sim.Options { o.Token = "<redacted>"; return o }

// hostPort splits the simulator URL for the driver's connector options.
func hostPort(t testing.TB, s *sim.Server) (host string, port int) {
	t.Helper()
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatalf("sim URL %q: %v", s.URL(), err)
	}
	port, err = strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("sim URL %q has no port: %v", s.URL(), err)
	}
	return u.Hostname(), port
}

// firstWarehouse returns the simulator's first warehouse id.
func firstWarehouse(t testing.TB, s *sim.Server) string {
	t.Helper()
	ids := s.WarehouseIDs()
	if len(ids) == 0 {
		t.Fatal("simulator has no warehouses")
	}
	return ids[0]
}

// truthOp mirrors one entry of GET /sim/v1/truth "operations".
type truthOp struct {
	StatementID       string     `json:"statement_id"`
	WarehouseID       string     `json:"warehouse_id"`
	ClientKind        string     `json:"client_kind"`
	State             string     `json:"state"`
	Open              bool       `json:"open"`
	OwnerLastActivity *time.Time `json:"owner_last_activity"`
}

// truthEndpoint mirrors one entry of GET /sim/v1/truth "endpoints".
type truthEndpoint struct {
	Name      string `json:"name"`
	Rows      int64  `json:"rows"`
	RowLimit  int64  `json:"row_limit"`
	Exhausted bool   `json:"exhausted"`
}

type truth struct {
	Operations []truthOp       `json:"operations"`
	Endpoints  []truthEndpoint `json:"endpoints"`
}

func (tr truth) op(id string) (truthOp, bool) {
	for _, o := range tr.Operations {
		if o.StatementID == id {
			return o, true
		}
	}
	return truthOp{}, false
}

// stats mirrors GET /sim/v1/stats.
type stats struct {
	Operations map[string]int64 `json:"operations"`
	Requests   map[string]int64 `json:"requests"`
	Faults     map[string]int64 `json:"faults"`
}

func (st stats) totalRequests() int64 {
	var n int64
	for _, v := range st.Requests {
		n += v
	}
	return n
}

// minus returns the per-call request counts of st that happened after base.
func (st stats) minus(base stats) stats {
	out := stats{Operations: st.Operations, Requests: map[string]int64{}, Faults: map[string]int64{}}
	for k, v := range st.Requests {
		if d := v - base.Requests[k]; d != 0 {
			out.Requests[k] = d
		}
	}
	for k, v := range st.Faults {
		if d := v - base.Faults[k]; d != 0 {
			out.Faults[k] = d
		}
	}
	return out
}

// introspect GETs a /sim/v1 document with the bearer token. Introspection
// goes through its own transport so that faults injected for the clients
// under test never hit the measuring instrument... unless the simulator
// applies faults to /sim/v1 too, which would be a simulator bug we report.
var introspectClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

func getJSON(t testing.TB, s *sim.Server, path string, v any) {
	t.Helper()
	var lastErr error
	// A couple of attempts: introspection must not be the flaky part.
	for attempt := 1; attempt <= 3; attempt++ {
		lastErr = getJSONOnce(s, path, v)
		if lastErr == nil {
			return
		}
	}
	t.Fatalf("GET %s: %v", path, lastErr)
}

func getJSONOnce(s *sim.Server, path string, v any) error {
	req, err := http.NewRequest(http.MethodGet, s.URL()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := introspectClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode %s: %w (body %.200q)", path, err, body)
	}
	return nil
}

func getTruth(t testing.TB, s *sim.Server) truth {
	t.Helper()
	var tr truth
	getJSON(t, s, "/sim/v1/truth", &tr)
	return tr
}

func getStats(t testing.TB, s *sim.Server) stats {
	t.Helper()
	var st stats
	getJSON(t, s, "/sim/v1/stats", &st)
	return st
}

// waitFor polls the simulator's truth until cond holds or the deadline
// passes. Polling the ground truth is the event we await: the simulator has
// no push channel.
func waitFor(t testing.TB, s *sim.Server, within time.Duration, what string, cond func(truth) bool) truth {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		tr := getTruth(t, s)
		if cond(tr) {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s never held; truth: %+v", within, what, tr.Operations)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForStats is waitFor on the simulator's request and fault counts.
func waitForStats(t testing.TB, s *sim.Server, within time.Duration, what string, cond func(stats) bool) stats {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := getStats(t, s)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s never held; requests %v, faults %v", within, what, st.Requests, st.Faults)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// isTerminal reports the terminal states of docs/model.md (States).
func isTerminal(state string) bool {
	switch state {
	case "FINISHED", "FAILED", "CANCELED", "CLOSED":
		return true
	}
	return false
}

// noSecret fails the test when the token appears in text.
func noSecret(t testing.TB, s *sim.Server, where, text string) {
	t.Helper()
	if s.Token() != "" && strings.Contains(text, s.Token()) {
		t.Errorf("%s contains the token", where)
	}
}
