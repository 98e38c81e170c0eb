package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// amNotification is one Alertmanager webhook delivery, as received.
type amNotification struct {
	at          time.Time
	Receiver    string            `json:"receiver"`
	Status      string            `json:"status"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

// amReceiver is the webhook the test's Alertmanager delivers to.
type amReceiver struct {
	mu  sync.Mutex
	got []amNotification
}

func (r *amReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var n amNotification
	b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err := json.Unmarshal(b, &n); err == nil {
		n.at = time.Now()
		r.mu.Lock()
		r.got = append(r.got, n)
		r.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

func (r *amReceiver) all() []amNotification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]amNotification(nil), r.got...)
}

// TestAlertsReachAlertmanager: the simulator → dbxtop serve (the built
// binary) → a real Prometheus with the shipped rules → a real
// Alertmanager with the shipped routing → a webhook receiver here.
//
//   - vector-incident (workspace "vector"): the critical capacity alert
//     reaches the receiver before the endpoint's first RESOURCE_EXHAUSTED;
//   - the demo with owner activity, 10× faster (workspace "orders", one
//     warehouse): an orphan storm of at least ten orphans reaches the
//     receiver as one notification for that warehouse, holding one alert;
//   - every query of every dashboard panel returns data from that
//     Prometheus.
//
// The Alertmanager configuration is the shipped one with the receivers'
// URLs pointed here and group_wait/group_interval short, so that an alert
// per orphan would show as several notifications.
func TestAlertsReachAlertmanager(t *testing.T) {
	budget(t)
	promBin := testenv.Tool(t, "prometheus")
	amBin := testenv.Tool(t, "prometheus-alertmanager")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// The receiver.
	rec := &amReceiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: rec, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	// Alertmanager: the shipped routing, timings fixed for the test.
	amConf, err := os.ReadFile("../docs/alerts/alertmanager.yml")
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.ReplaceAll(string(amConf), "http://127.0.0.1:9095", "http://"+ln.Addr().String())
	conf = strings.Replace(conf, "group_wait: 30s", "group_wait: 1s", 1)
	conf = strings.Replace(conf, "group_interval: 5m", "group_interval: 2s", 1)
	if strings.Contains(conf, "9095") || !strings.Contains(conf, "group_wait: 1s") || !strings.Contains(conf, "group_interval: 2s") {
		t.Fatalf("could not adapt the shipped Alertmanager configuration:\n%s", conf)
	}
	amPath := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(amPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	amAddr := freeAddr(t)
	amLog := newLockedBuffer(200)
	am := exec.CommandContext(ctx, amBin, "--config.file="+amPath, "--storage.path="+filepath.Join(dir, "am"),
		"--web.listen-address="+amAddr, "--cluster.listen-address=", "--log.level=warn")
	am.Stdout, am.Stderr = amLog, amLog
	am.WaitDelay = 5 * time.Second
	if err := am.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = am.Process.Kill(); _ = am.Wait() }()
	awaitCond(t, ctx, "Alertmanager ready", amLog, func() bool { return httpIsOK("http://" + amAddr + "/-/ready") })

	// The workspaces.
	vector, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioVectorIncident})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = vector.Close(context.Background()) }()
	// Lenient handles: serve reads the owner's activity through handles it
	// rebuilds from statement ids (no proxy in this rig), which a strict
	// server refuses.
	orders, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioDemo, Warehouses: 1, Speed: 10, OwnerActivity: true, LenientHandles: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = orders.Close(context.Background()) }()
	warehouse := orders.WarehouseIDs()[0]

	home := filepath.Join(dir, "home")
	cfgDir := filepath.Join(home, ".config", "dbxtop")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	prof := fmt.Sprintf("[vector]\nhost = %s\ntoken = %s\n\n[orders]\nhost = %s\ntoken = %s\n", vector.URL(), vector.Token(), orders.URL(), orders.Token())
	if err := os.WriteFile(filepath.Join(home, ".databrickscfg"), []byte(prof), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[contexts.vector]\nprofile = \"vector\"\n[contexts.orders]\nprofile = \"orders\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The demo's idle timeout is 90 s / 10.
	serve := start(t, home, nil, "serve", "--context", "all", "--listen", "127.0.0.1:0", "--refresh", "1s",
		"--inactivity-warn", "1s", "--server-idle-timeout", "9s")
	first := serve.waitFirstLine(30 * time.Second)
	var listen, token string
	if n, _ := fmt.Sscanf(first, "listen=%s token=%s", &listen, &token); n != 2 {
		t.Fatalf("first line %q", first)
	}

	// Prometheus: the shipped rules, alerts to that Alertmanager.
	rules, err := filepath.Abs("../docs/alerts/dbxtop.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	promConf := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
scrape_configs:
  - job_name: fleet
    authorization:
      credentials: %q
    static_configs:
      - targets: [%q]
`, rules, amAddr, token, strings.TrimPrefix(listen, "http://"))
	promPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(promPath, []byte(promConf), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := freeAddr(t)
	promLog := newLockedBuffer(200)
	prom := exec.CommandContext(ctx, promBin, "--config.file="+promPath, "--storage.tsdb.path="+filepath.Join(dir, "prom"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	prom.Stdout, prom.Stderr = promLog, promLog
	prom.WaitDelay = 5 * time.Second
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Process.Kill(); _ = prom.Wait() }()
	promURL := "http://" + promAddr
	awaitCond(t, ctx, "Prometheus ready", promLog, func() bool { return httpIsOK(promURL + "/-/ready") })

	// Orphans of the storm, counted from the simulator's truth as they are
	// reaped (finished operations leave the truth after a while).
	var reapedMu sync.Mutex
	reaped := map[string]bool{}
	countReaped := func() int {
		for _, o := range orders.Truth().Operations {
			if o.ClientKind == "abandons" && o.WarehouseID == warehouse && strings.Contains(o.ErrorMessage, "inactivity") {
				reapedMu.Lock()
				reaped[o.StatementID] = true
				reapedMu.Unlock()
			}
		}
		reapedMu.Lock()
		defer reapedMu.Unlock()
		return len(reaped)
	}

	// 1. The critical capacity alert arrives before the first refusal.
	var critical amNotification
	awaitCond(t, ctx, "a critical capacity notification for vector/vs-endpoint-1", promLog, func() bool {
		countReaped()
		for _, n := range rec.all() {
			for _, a := range n.Alerts {
				if a.Status == "firing" && a.Labels["severity"] == "critical" && a.Labels["workspace"] == "vector" &&
					a.Labels["endpoint"] == sim.IncidentEndpoint && strings.HasPrefix(a.Labels["alertname"], "DbxtopEndpoint") {
					critical = n
					return true
				}
			}
		}
		return false
	})
	var refusedAt time.Time
	awaitCond(t, ctx, "the endpoint's first refusal", promLog, func() bool {
		countReaped()
		for _, e := range vector.Truth().Endpoints {
			if e.Name == sim.IncidentEndpoint && e.FirstRefusedAt != nil {
				refusedAt = *e.FirstRefusedAt
				return true
			}
		}
		return false
	})
	t.Logf("critical %s reached the receiver %v before the first RESOURCE_EXHAUSTED", critical.Alerts[0].Labels["alertname"], refusedAt.Sub(critical.at).Round(time.Second))
	if !critical.at.Before(refusedAt) {
		t.Errorf("the critical capacity alert arrived at %v, after the first refusal at %v", critical.at, refusedAt)
	}

	// 2. The orphan storm: one notification for the warehouse, one alert in it.
	awaitCond(t, ctx, "ten orphans reaped on the warehouse", promLog, func() bool { return countReaped() >= 10 })
	time.Sleep(3 * time.Second) // two group_intervals: any further notification would be out
	var forWarehouse []amNotification
	for _, n := range rec.all() {
		if n.GroupLabels["workspace"] == "orders" && n.GroupLabels["warehouse"] == warehouse {
			forWarehouse = append(forWarehouse, n)
		}
	}
	if len(forWarehouse) != 1 || len(forWarehouse[0].Alerts) != 1 || forWarehouse[0].Status != "firing" {
		t.Errorf("%d orphans reaped on orders/%s: want one firing notification with one alert, got %d: %+v",
			countReaped(), warehouse, len(forWarehouse), forWarehouse)
	} else {
		t.Logf("%d orphans reaped on orders/%s: one notification (%s to %s)", countReaped(), warehouse,
			forWarehouse[0].Alerts[0].Labels["alertname"], forWarehouse[0].Receiver)
	}

	// 3. Every dashboard panel's queries return data.
	dash, err := os.ReadFile("../contrib/grafana/dbxtop.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dash, &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer(`"$workspace"`, `".*"`, `"$job"`, `".*"`, "$__rate_interval", "1m")
	queries := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			q := vars.Replace(tg.Expr)
			queries++
			awaitCond(t, ctx, fmt.Sprintf("data for panel %q: %s", p.Title, q), promLog, func() bool { return promQuery(t, promURL, q) > 0 })
		}
	}
	t.Logf("%d dashboard queries returned data", queries)
	if code, _ := serve.signalAndWait(syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("serve exit %d after SIGTERM\n%s", code, serve.stderr)
	}
}

func httpIsOK(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
