package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

func (l *logBuf) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(b)
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Metrics at /metrics behind the admin token, health without it; the
// logs (JSON), metrics, stats and facts hold no token and no SQL text.
func TestMetricsHealthAndLogsHoldNoSecret(t *testing.T) {
	s := startSim(t, "")
	logs := &logBuf{}
	// No --close-abandoned: a window short enough for a test is shorter
	// than a loaded machine's gap between a client's two status polls,
	// and the proxy would close the statement under runStatement.
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy(),
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	const sql = "SELECT id FROM range(2500) -- secret-sql-marker"
	c := client(t, p.URL(), s.Token(), "testapp/1.0")
	if _, _, err := runStatement(ctx, c, wh, sql); err != nil {
		t.Fatal(err)
	}
	// A queued close, so its lines are logged.
	sess, err := c.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(ctx, sess, "SELECT sleep(600) -- secret-sql-marker", false)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := sim.ParseFaults("unavailable=1@CloseOperation")
	s.SetFaults(f)
	_ = c.CloseOperation(ctx, op.Ref)
	s.SetFaults(sim.Faults{})
	waitFor(t, "the queued close", 20*time.Second, func() bool { return p.Stats().ClosedByProxy == 1 })

	if code, _ := get(t, p.AdminURL()+adminapi.PathMetrics, ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: HTTP %d, want 401", code)
	}
	code, metrics := get(t, p.AdminURL()+adminapi.PathMetrics, p.AdminToken())
	if code != 200 {
		t.Fatalf("/metrics: HTTP %d", code)
	}
	for _, want := range []string{`dbxtop_proxy_requests_total{method="ExecuteStatement",outcome="ok"} 2`,
		`dbxtop_proxy_requests_total{method="CloseOperation",outcome="http_error"}`,
		"dbxtop_proxy_upstream_latency_seconds_bucket", "dbxtop_proxy_closes_queued_total 1", "dbxtop_proxy_closes_completed_total 1",
		"dbxtop_proxy_held_operations 2", "dbxtop_proxy_evictions_total 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	code, body := get(t, p.AdminURL()+adminapi.PathHealth, "")
	var h adminapi.Health
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != 200 || h.Status != "ok" || !h.UpstreamReachable {
		t.Errorf("health without a token: HTTP %d %s", code, body)
	}
	if strings.Contains(body, s.URL()) || strings.Contains(body, strings.TrimPrefix(s.URL(), "http://")) {
		t.Errorf("health names the upstream: %s", body)
	}
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	stats, _ := json.Marshal(p.Stats())
	all := logs.String() + metrics + body + string(stats) + func() string { b, _ := json.Marshal(doc); return string(b) }()
	for _, secret := range []string{s.Token(), "secret-sql-marker", "range(2500)"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q reached the logs, metrics or admin API", secret)
		}
	}
	for _, want := range []string{`"msg":"close queued"`, `"msg":"closed by the proxy"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// With the upstream down, health says so (503, a reason naming no host),
// and a client's call gets a 502 whose body and log line say why.
func TestUpstreamDownExplained(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	logs := &logBuf{}
	p := startProxy(t, dead, Options{Heal: true, Policy: fastPolicy(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	code, body := get(t, p.AdminURL()+adminapi.PathHealth, "")
	var h adminapi.Health
	_ = json.Unmarshal([]byte(body), &h)
	if code != http.StatusServiceUnavailable || h.Status != "upstream_unreachable" || h.UpstreamReason == "" || strings.Contains(body, ln.Addr().String()) {
		t.Errorf("health with the upstream down: HTTP %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = client(t, p.URL(), "tok-abc-123456", "app/1").OpenSession(ctx, "w1")
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusBadGateway || !strings.Contains(he.Message, "refused") {
		t.Fatalf("want a 502 saying the connection was refused, got %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "upstream failure") || !strings.Contains(l, "call=OpenSession") || strings.Contains(l, "tok-abc-123456") {
		t.Errorf("log: %s", l)
	}
}
