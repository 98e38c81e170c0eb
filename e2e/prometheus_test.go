package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestPrometheusOrphanAlertFiresBeforeTheReaper: a real Prometheus server
// on loopback scrapes `dbxtop serve` (the built binary) watching the
// simulator, with the shipped alert rules. A client abandons a statement;
// the dbxtop_ series appear and DbxtopOrphanAboutToBeReaped is firing in
// Prometheus's /api/v1/alerts while the simulator still runs the
// statement (its reaper has not failed it yet).
func TestPrometheusOrphanAlertFiresBeforeTheReaper(t *testing.T) {
	budget(t)
	promBin := testenv.Tool(t, "prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The reaper is far enough away that "firing before the reaper" never
	// depends on machine speed; the test waits for events, not for time.
	// OwnerActivity: the simulator volunteers the owning client's last
	// activity (the INACTIVE evidence a real server gives only through the
	// proxy), as `dbxtop sim --owner-activity` does. Lenient handles: dbxtop
	// reads it through a handle rebuilt from the statement id, not the proxy.
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1, IdleTimeout: 150 * time.Second,
		OwnerActivity: true, LenientHandles: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close(context.Background()) }()

	// The orphan: one Thrift client executes a long statement, then goes
	// silent (the JDBC bug: no more polls, no cancel, no close).
	owner, err := thrift.NewClient(thrift.Options{Host: srv.URL(), Token: srv.Token(), UserAgent: "Databricks JDBC 2.6.36"})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.CloseIdleConnections()
	sess, err := owner.OpenSession(ctx, srv.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := owner.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	id := op.Ref.StatementID

	home := t.TempDir()
	serve := start(t, home, []string{"DATABRICKS_TOKEN=" + srv.Token()}, "serve", "--host", srv.URL(),
		"--listen", "127.0.0.1:0", "--refresh", "500ms", "--inactivity-warn", "2s", "--server-idle-timeout", "150s")
	first := serve.waitFirstLine(30 * time.Second)
	var listen, token string
	if n, _ := fmt.Sscanf(first, "listen=%s token=%s", &listen, &token); n != 2 || !strings.HasPrefix(listen, "http://127.0.0.1:") || len(token) != 32 {
		t.Fatalf("first line %q", first)
	}
	target := strings.TrimPrefix(listen, "http://")

	// Prometheus: scrape every second, evaluate the shipped rules every second.
	rules, err := filepath.Abs("../docs/alerts/dbxtop.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	promDir := t.TempDir()
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: dbxtop
    authorization:
      credentials: %q
    static_configs:
      - targets: [%q]
`, rules, token, target)
	confPath := filepath.Join(promDir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := freeAddr(t)
	prom := exec.CommandContext(ctx, promBin, "--config.file="+confPath, "--storage.tsdb.path="+filepath.Join(promDir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	promLog := newLockedBuffer(200)
	prom.Stdout, prom.Stderr = promLog, promLog
	prom.WaitDelay = 5 * time.Second
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Process.Kill(); _ = prom.Wait() }()
	promURL := "http://" + promAddr

	awaitCond(t, ctx, "Prometheus ready", promLog, func() bool {
		resp, err := http.Get(promURL + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	// The series appear: the workspace is observed, and dbxtop's counters and gauges are there.
	awaitCond(t, ctx, "dbxtop series in Prometheus", promLog, func() bool {
		return promQuery(t, promURL, `dbxtop_observe_up == 1`) > 0 &&
			promQuery(t, promURL, `dbxtop_calls_total`) > 0 &&
			promQuery(t, promURL, `dbxtop_retry_budget_tokens`) > 0
	})
	awaitCond(t, ctx, "DbxtopOrphanAboutToBeReaped firing", promLog, func() bool {
		return alertState(t, promURL, "DbxtopOrphanAboutToBeReaped") == "firing"
	})
	// …while the simulator still runs the abandoned statement.
	for _, o := range srv.Truth().Operations {
		if o.StatementID == id && o.State != "RUNNING" {
			t.Fatalf("the statement is already %s: the alert came after the reaper", o.State)
		}
	}
	if code, _ := serve.signalAndWait(syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("serve exit %d after SIGTERM\n%s", code, serve.stderr)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// awaitCond polls cond until it holds; the deadline is the test's context.
func awaitCond(t *testing.T, ctx context.Context, what string, log fmt.Stringer, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; prometheus log:\n%s", what, log)
		case <-tick.C:
		}
	}
}

// promQuery returns how many series an instant query returns.
func promQuery(t *testing.T, base, q string) int {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("query %s: %v: %s", q, err, b)
	}
	return len(out.Data.Result)
}

func alertState(t *testing.T, base, name string) string {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/alerts")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("alerts: %v", err)
	}
	for _, a := range out.Data.Alerts {
		if a.Labels["alertname"] == name {
			return a.State
		}
	}
	return ""
}
