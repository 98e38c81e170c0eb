package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAuth401(t *testing.T) {
	s := startSim(t, Options{Token: "s3cr3t-token-value"})
	c := httpClient(t)
	for _, tc := range []struct{ method, path, token string }{
		{"GET", "/sim/v1/stats", ""},
		{"GET", "/sim/v1/truth", "wrong"},
		{"GET", "/api/2.0/sql/history/queries", ""},
		{"POST", "/sql/1.0/warehouses/" + s.WarehouseIDs()[0], "s3cr3t-token-valuX"},
		{"GET", "/api/2.0/nothing/here", ""},
	} {
		r := mustDo(t, c, tc.method, s.URL()+tc.path, tc.token, "", "")
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s %s: status %d, want 401", tc.method, tc.path, r.status)
			continue
		}
		var e apiError
		r.json(t, &e)
		if e.ErrorCode != "UNAUTHENTICATED" || len(e.Details) != 1 || !uuidV4.MatchString(e.Details[0].RequestID) {
			t.Errorf("%s: body %s", tc.path, r.body)
		}
		if strings.Contains(string(r.body), "s3cr3t") || strings.Contains(string(r.body), tc.token) && tc.token != "" {
			t.Errorf("401 body echoes a token: %s", r.body)
		}
	}
	if r := mustDo(t, c, "GET", s.URL()+"/sim/v1/stats", s.Token(), "", ""); r.status != 200 {
		t.Errorf("authenticated stats: %d", r.status)
	}
	if s.Token() != "s3cr3t-token-value" {
		t.Errorf("Token() = %q", s.Token())
	}
}

func TestRandomTokenAndPortInUse(t *testing.T) {
	s := startSim(t, Options{})
	if len(s.Token()) != 32 {
		t.Errorf("random token %q is not 32 hex chars", s.Token())
	}
	addr := strings.TrimPrefix(s.URL(), "http://")
	_, err := Start(context.Background(), Options{Listen: addr, Scenario: ScenarioQuiet})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second Start on %s: %v, want a clear port-in-use error", addr, err)
	}
	if _, err := Start(context.Background(), Options{Faults: "reset=2", Scenario: ScenarioQuiet}); err == nil ||
		!strings.Contains(err.Error(), `fault "reset=2"`) {
		t.Errorf("bad faults: %v", err)
	}
}

// TestTruthAndStatsShapes checks the exact key sets of docs/simulator.md (Ground truth).
func TestTruthAndStatsShapes(t *testing.T) {
	s := startSim(t, Options{})
	c := httpClient(t)
	ss := s.store.openSession(s.WarehouseIDs()[0], "u@example.com", "test", KindExternal, true)
	s.store.execute(ss, "SELECT sleep(100)", planStatement("SELECT sleep(100)", 0, 0), true, nil)

	var st map[string]map[string]any
	mustDo(t, c, "GET", s.URL()+"/sim/v1/stats", s.Token(), "", "").json(t, &st)
	for _, k := range []string{"open", "running", "terminal_unclosed", "closed", "canceled", "reaped_inactive", "reaped_unclosed"} {
		if _, ok := st["operations"][k]; !ok {
			t.Errorf("stats.operations lacks %q: %v", k, st["operations"])
		}
	}
	if st["operations"]["open"].(float64) != 1 || st["operations"]["running"].(float64) != 1 {
		t.Errorf("stats.operations = %v", st["operations"])
	}
	if _, ok := st["requests"]["SimStats"]; !ok {
		t.Errorf("stats.requests = %v", st["requests"])
	}
	if _, ok := st["faults"]; !ok {
		t.Error("stats lacks faults")
	}

	var tr struct {
		Operations []map[string]any `json:"operations"`
		Endpoints  []map[string]any `json:"endpoints"`
	}
	mustDo(t, c, "GET", s.URL()+"/sim/v1/truth", s.Token(), "", "").json(t, &tr)
	if len(tr.Operations) != 1 || len(tr.Endpoints) != 3 {
		t.Fatalf("truth: %d ops, %d endpoints", len(tr.Operations), len(tr.Endpoints))
	}
	op := tr.Operations[0]
	for _, k := range []string{"statement_id", "warehouse_id", "client_kind", "state", "open", "owner_last_activity"} {
		if _, ok := op[k]; !ok {
			t.Errorf("truth operation lacks %q: %v", k, op)
		}
	}
	if op["client_kind"] != "external" || op["state"] != "PENDING" && op["state"] != "RUNNING" || op["open"] != true {
		t.Errorf("truth operation = %v", op)
	}
	if _, err := time.Parse(time.RFC3339, op["owner_last_activity"].(string)); err != nil {
		t.Errorf("owner_last_activity: %v", err)
	}
	for _, e := range tr.Endpoints {
		for _, k := range []string{"name", "rows", "row_limit", "exhausted"} {
			if _, ok := e[k]; !ok {
				t.Errorf("truth endpoint lacks %q: %v", k, e)
			}
		}
	}
}

// ---- faults seen by a plain net/http client ------------------------------------

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func TestFaultReset(t *testing.T) {
	s := startSim(t, Options{Faults: "reset=1@ListWarehouses"})
	c := httpClient(t)
	_, err := do(t, c, "GET", s.URL()+"/api/2.0/sql/warehouses", s.Token(), "", "")
	if err == nil || !isReset(err) {
		t.Fatalf("err = %v, want a connection reset or EOF", err)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Logf("note: got %v rather than ECONNRESET", err)
	}
	// Other calls are untouched.
	if r := mustDo(t, c, "GET", s.URL()+"/api/2.0/vector-search/endpoints", s.Token(), "", ""); r.status != 200 {
		t.Errorf("ListEndpoints: %d", r.status)
	}
	if st := s.Stats(); st.Faults["reset"] != 1 || st.Requests["ListWarehouses"] != 1 {
		t.Errorf("stats = %+v", st)
	}
}

// A raw TCP client proves the reset is a real RST (ECONNRESET on read),
// not a graceful close.
func TestFaultResetIsTCPReset(t *testing.T) {
	s := startSim(t, Options{Faults: "reset=1"})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.Write([]byte("GET /api/2.0/sql/warehouses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + s.Token() + "\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read: %v, want ECONNRESET", err)
	}
}

// stale: the answer arrives; the next request on that pooled connection
// fails; a fresh connection works.
func TestFaultStale(t *testing.T) {
	s := startSim(t, Options{Faults: "stale=1@UpsertDataVectorIndex"})
	c := httpClient(t)
	url := s.URL() + "/api/2.0/vector-search/indexes/dev.sandbox.docs_idx/upsert-data"
	var reused []bool
	post := func() (reply, error) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"inputs_json":"[]"}`))
		req.Header.Set("Authorization", "Bearer "+s.Token())
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
		}))
		resp, err := c.Do(req)
		if err != nil {
			return reply{}, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{status: resp.StatusCode, body: b}, nil
	}
	if r, err := post(); err != nil || r.status != 200 {
		t.Fatalf("first upsert: %v %d %s", err, r.status, r.body)
	}
	_, err := post()
	if err == nil || !isReset(err) {
		t.Fatalf("reuse of the stale connection: %v, want reset/EOF", err)
	}
	if len(reused) != 2 || !reused[1] {
		t.Fatalf("connection reuse trace %v: the second request should reuse the first connection", reused)
	}
	if st := s.Stats(); st.Faults["stale"] != 1 {
		t.Errorf("faults = %v", st.Faults)
	}
	// A fresh connection is served (and poisoned again: stale=1).
	c.Transport.(*http.Transport).CloseIdleConnections()
	if r, err := post(); err != nil || r.status != 200 {
		t.Errorf("fresh connection: %v", err)
	}
}

func TestFaultHTTPAnswers(t *testing.T) {
	for _, tc := range []struct {
		spec       string
		status     int
		code       string
		retryAfter string
	}{
		{"throttle=1", 429, "REQUEST_LIMIT_EXCEEDED", "1"},
		{"throttle-bare=1", 429, "REQUEST_LIMIT_EXCEEDED", ""},
		{"unavailable=1", 503, "TEMPORARILY_UNAVAILABLE", ""},
		{"quota=1", 429, "RESOURCE_EXHAUSTED", ""},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			s := startSim(t, Options{Faults: tc.spec})
			r := mustDo(t, httpClient(t), "GET", s.URL()+"/api/2.0/sql/history/queries", s.Token(), "", "")
			if r.status != tc.status || r.header.Get("Retry-After") != tc.retryAfter {
				t.Fatalf("status %d Retry-After %q; want %d %q", r.status, r.header.Get("Retry-After"), tc.status, tc.retryAfter)
			}
			var e apiError
			r.json(t, &e)
			if e.ErrorCode != tc.code || e.Details[0].Type != requestInfoType || !uuidV4.MatchString(e.Details[0].RequestID) {
				t.Errorf("body %s", r.body)
			}
			if r.header.Get("x-request-id") != e.Details[0].RequestID {
				t.Errorf("x-request-id %q != body request_id", r.header.Get("x-request-id"))
			}
			kind, _, _ := strings.Cut(tc.spec, "=")
			if n := s.Stats().Faults[kind]; n != 1 {
				t.Errorf("faults[%s] = %d", kind, n)
			}
		})
	}
}

func TestFaultGatewayAndLatency(t *testing.T) {
	s := startSim(t, Options{Faults: "gateway=1@GetEndpoint,latency=150ms@ListEndpoints"})
	c := httpClient(t)
	var codes []int
	for i := 0; i < 2; i++ {
		r := mustDo(t, c, "GET", s.URL()+"/api/2.0/vector-search/endpoints/vs-prod", s.Token(), "", "")
		codes = append(codes, r.status)
		if !strings.Contains(string(r.body), "<html>") || strings.Contains(string(r.body), "error_code") {
			t.Errorf("gateway body is not a load balancer page: %s", r.body)
		}
	}
	if codes[0] != 502 || codes[1] != 504 {
		t.Errorf("codes %v, want 502 then 504", codes)
	}
	start := time.Now()
	if r := mustDo(t, c, "GET", s.URL()+"/api/2.0/vector-search/endpoints", s.Token(), "", ""); r.status != 200 {
		t.Errorf("ListEndpoints %d", r.status)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("latency fault: answered in %v, want ≥ 150ms", el)
	}
	// SetFaults swaps the spec at run time.
	s.SetFaults(nil)
	if r := mustDo(t, c, "GET", s.URL()+"/api/2.0/vector-search/endpoints/vs-prod", s.Token(), "", ""); r.status != 200 {
		t.Errorf("after SetFaults(nil): %d", r.status)
	}
	if f := s.Stats().Faults; f["gateway"] != 2 || f["latency"] != 1 {
		t.Errorf("faults %v", f)
	}
}

func TestFaultsAreSeeded(t *testing.T) {
	run := func(seed int64) string {
		s := startSim(t, Options{Seed: seed, Faults: "unavailable=0.5@ListWarehouses"})
		c := httpClient(t)
		var b strings.Builder
		for i := 0; i < 24; i++ {
			r := mustDo(t, c, "GET", s.URL()+"/api/2.0/sql/warehouses", s.Token(), "", "")
			// Other calls in between must not shift the sequence.
			mustDo(t, c, "GET", s.URL()+"/api/2.0/vector-search/endpoints", s.Token(), "", "")
			b.WriteString(map[bool]string{true: "U", false: "."}[r.status == 503])
		}
		return b.String()
	}
	a, b := run(7), run(7)
	if a != b {
		t.Errorf("seed 7 gave %s then %s", a, b)
	}
	if !strings.Contains(a, "U") || !strings.Contains(a, ".") {
		t.Errorf("p=0.5 sequence %s", a)
	}
}

// ---- vector search -------------------------------------------------------------

func TestUpsertFillsEndpointToResourceExhausted(t *testing.T) {
	s := startSim(t, Options{})
	c := httpClient(t)
	url := s.URL() + "/api/2.0/vector-search/indexes/dev.sandbox.docs_idx/upsert-data"
	limit := s.EndpointRowLimits()["vs-staging"]
	ep, _ := s.vec.endpoint("vs-staging")
	room := limit - ep.Rows
	rows := make([]string, room)
	for i := range rows {
		rows[i] = `{"id":1}`
	}
	inputs, _ := json.Marshal(map[string]string{"inputs_json": "[" + strings.Join(rows, ",") + "]"})
	r := mustDo(t, c, "POST", url, s.Token(), "", string(inputs))
	var ok struct {
		Status string `json:"status"`
		Result struct {
			SuccessRowCount int64 `json:"success_row_count"`
		} `json:"result"`
	}
	r.json(t, &ok)
	if r.status != 200 || ok.Status != "SUCCESS" || ok.Result.SuccessRowCount != room {
		t.Fatalf("filling upsert: %d %s", r.status, r.body)
	}
	// Full: even an empty upsert is refused with RESOURCE_EXHAUSTED.
	r = mustDo(t, c, "POST", url, s.Token(), "", `{"inputs_json":"[]"}`)
	var e apiError
	r.json(t, &e)
	if r.status != 429 || e.ErrorCode != "RESOURCE_EXHAUSTED" || !uuidV4.MatchString(e.Details[0].RequestID) {
		t.Fatalf("full endpoint: %d %s", r.status, r.body)
	}
	var tr Truth
	mustDo(t, c, "GET", s.URL()+"/sim/v1/truth", s.Token(), "", "").json(t, &tr)
	for _, e := range tr.Endpoints {
		if e.Name == "vs-staging" && (!e.Exhausted || e.Rows != limit || e.RowLimit != limit) {
			t.Errorf("truth endpoint %+v", e)
		}
	}
	// exhausted=ENDPOINT makes another endpoint full now.
	s.SetFaults(Faults{{Kind: FaultExhausted, Endpoint: "vs-prod"}})
	r = mustDo(t, c, "POST", s.URL()+"/api/2.0/vector-search/indexes/main.support.tickets_idx/upsert-data", s.Token(), "", `{"inputs_json":"[]"}`)
	if r.status != 429 || !strings.Contains(string(r.body), "RESOURCE_EXHAUSTED") {
		t.Errorf("exhausted fault: %d %s", r.status, r.body)
	}
	// A Delta Sync index takes no upserts (the simulator's own answer).
	r = mustDo(t, c, "POST", s.URL()+"/api/2.0/vector-search/indexes/main.analytics.products_idx/upsert-data", s.Token(), "", `{"inputs_json":"[]"}`)
	if r.status != 400 || !strings.Contains(string(r.body), "INVALID_PARAMETER_VALUE") || !strings.Contains(string(r.body), "Delta Sync") {
		t.Errorf("Delta Sync upsert: %d %s", r.status, r.body)
	}
	if s.Stats().Faults["exhausted"] != 1 {
		t.Errorf("faults %v", s.Stats().Faults)
	}
	r = mustDo(t, c, "POST", s.URL()+"/api/2.0/vector-search/indexes/no.such.idx/upsert-data", s.Token(), "", `{"inputs_json":"[]"}`)
	if r.status != 404 || !strings.Contains(string(r.body), "RESOURCE_DOES_NOT_EXIST") {
		t.Errorf("unknown index: %d %s", r.status, r.body)
	}
}

// Close does not wait out an injected latency.
func TestCloseEndsInjectedLatency(t *testing.T) {
	s, err := Start(context.Background(), Options{Scenario: ScenarioQuiet, Faults: "latency=1h"})
	if err != nil {
		t.Fatal(err)
	}
	c := httpClient(t)
	got := make(chan error, 1)
	go func() {
		r, err := do(t, c, "GET", s.URL()+"/api/2.0/sql/warehouses", s.Token(), "", "")
		if err == nil && r.status != http.StatusServiceUnavailable {
			err = errors.New("status " + http.StatusText(r.status))
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "the request to be held", func() bool { return s.Stats().Faults["latency"] == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-got; err != nil {
		t.Errorf("held request: %v", err)
	}
}
