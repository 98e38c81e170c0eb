package e2e

import (
	"bytes"
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
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// amAlert is one alert of a webhook delivery.
type amAlert struct {
	Status string            `json:"status"`
	Labels map[string]string `json:"labels"`
}

// amNotification is one Alertmanager webhook delivery, as received.
type amNotification struct {
	at          time.Time
	Receiver    string            `json:"receiver"`
	Status      string            `json:"status"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []amAlert         `json:"alerts"`
}

// group names the Alertmanager group a notification belongs to: its
// receiver and group labels.
func (n amNotification) group() string {
	keys := make([]string, 0, len(n.GroupLabels))
	for k, v := range n.GroupLabels {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return n.Receiver + "{" + strings.Join(keys, ",") + "}"
}

// hasSentinel: the notification holds the test's sentinel alert.
func (n amNotification) hasSentinel() bool {
	for _, a := range n.Alerts {
		if a.Labels["e2e_sentinel"] != "" {
			return true
		}
	}
	return false
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

// alertRig is a real Alertmanager with the shipped routing delivering to
// a receiver in the test, and a real Prometheus with the shipped rules
// sending to it.
type alertRig struct {
	ctx     context.Context
	dir     string
	rec     *amReceiver
	amURL   string
	promURL string
	log     *lockedBuffer // both servers' output
}

// startAlertmanager starts the receiver and Alertmanager: the shipped
// configuration with the receivers' URLs pointed here and
// group_wait/group_interval short, so that an alert per orphan would show
// as several notifications.
func startAlertmanager(t *testing.T, ctx context.Context) *alertRig {
	amBin := testenv.Tool(t, "prometheus-alertmanager")
	r := &alertRig{ctx: ctx, dir: t.TempDir(), rec: &amReceiver{}, log: newLockedBuffer(400)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: r.rec, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

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
	amPath := filepath.Join(r.dir, "alertmanager.yml")
	if err := os.WriteFile(amPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	amAddr := freeAddr(t)
	am := exec.CommandContext(ctx, amBin, "--config.file="+amPath, "--storage.path="+filepath.Join(r.dir, "am"),
		"--web.listen-address="+amAddr, "--cluster.listen-address=", "--log.level=warn")
	am.Stdout, am.Stderr = r.log, r.log
	am.WaitDelay = 5 * time.Second
	if err := am.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = am.Process.Kill(); _ = am.Wait() })
	r.amURL = "http://" + amAddr
	awaitCond(t, ctx, "Alertmanager ready", r.log, func() bool { return httpIsOK(r.amURL + "/-/ready") })
	return r
}

// serveTarget is one dbxtop serve for Prometheus to scrape.
type serveTarget struct {
	job, listen, token string
}

// startPrometheus runs Prometheus with the shipped rules, scraping the
// targets every second and sending to the rig's Alertmanager.
func (r *alertRig) startPrometheus(t *testing.T, targets ...serveTarget) {
	promBin := testenv.Tool(t, "prometheus")
	rules, err := filepath.Abs("../docs/alerts/dbxtop.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - %q\n", rules)
	fmt.Fprintf(&b, "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [%q]\nscrape_configs:\n", strings.TrimPrefix(r.amURL, "http://"))
	for _, tg := range targets {
		fmt.Fprintf(&b, "  - job_name: %q\n    authorization:\n      credentials: %q\n    static_configs:\n      - targets: [%q]\n",
			tg.job, tg.token, strings.TrimPrefix(tg.listen, "http://"))
	}
	promPath := filepath.Join(r.dir, "prometheus.yml")
	if err := os.WriteFile(promPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := freeAddr(t)
	prom := exec.CommandContext(r.ctx, promBin, "--config.file="+promPath, "--storage.tsdb.path="+filepath.Join(r.dir, "prom"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	prom.Stdout, prom.Stderr = r.log, r.log
	prom.WaitDelay = 5 * time.Second
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Process.Kill(); _ = prom.Wait() })
	r.promURL = "http://" + promAddr
	awaitCond(t, r.ctx, "Prometheus ready", r.log, func() bool { return httpIsOK(r.promURL + "/-/ready") })
}

// promAlert is one alert of Prometheus' /api/v1/alerts.
type promAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

// alerts is Prometheus' active alerts (pending and firing) now.
func (r *alertRig) alerts(t *testing.T) []promAlert {
	t.Helper()
	resp, err := http.Get(r.promURL + "/api/v1/alerts")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("alerts: %v", err)
	}
	return out.Data.Alerts
}

// postSentinel adds an alert to the group of notification n: one more
// alert with its group labels and severity (and alertname, when the route
// groups by it), named DbxtopE2ESentinel otherwise so that no inhibition
// rule mutes it. Alertmanager delivers a group's notifications in order,
// so once the sentinel's arrives, every notification the group sent
// before it has arrived: no sleep decides that nothing more came.
func (r *alertRig) postSentinel(t *testing.T, n amNotification) {
	t.Helper()
	labels := map[string]string{"e2e_sentinel": "1", "alertname": "DbxtopE2ESentinel", "severity": n.Alerts[0].Labels["severity"]}
	for k, v := range n.GroupLabels {
		labels[k] = v
	}
	body, _ := json.Marshal([]map[string]any{{"labels": labels, "startsAt": time.Now().UTC().Format(time.RFC3339Nano)}})
	resp, err := http.Post(r.amURL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("posting the sentinel alert: HTTP %d", resp.StatusCode)
	}
}

// untilSentinel puts a sentinel in the group of the first notification
// pick selects, waits for the sentinel's notification, and returns the
// notifications pick selects that arrived before it.
func (r *alertRig) untilSentinel(t *testing.T, pick func(amNotification) bool) []amNotification {
	t.Helper()
	var first *amNotification
	for _, n := range r.rec.all() {
		if pick(n) && !n.hasSentinel() {
			first = &n
			break
		}
	}
	if first == nil {
		t.Fatal("no notification to put a sentinel beside")
	}
	r.postSentinel(t, *first)
	var before []amNotification
	awaitCond(t, r.ctx, "the sentinel's notification in "+first.group(), r.log, func() bool {
		before = before[:0]
		for _, n := range r.rec.all() {
			if n.group() == first.group() && n.hasSentinel() {
				return true
			}
			if pick(n) && !n.hasSentinel() {
				before = append(before, n)
			}
		}
		return false
	})
	return before
}

// TestAlertsReachAlertmanager: the simulator → the built dbxtop serve → a
// real Prometheus with the shipped rules → a real Alertmanager with the
// shipped routing → a webhook receiver here. It asserts what
// docs/fleet.md states:
//
//   - the unit's mode (a profile from the environment, no --context, no
//     --proxy) with --capacity-probe against vector-incident: the
//     workspace label is the host's name; DbxtopEndpointFullWithin10Minutes
//     is active in Prometheus (its activeAt) before the simulator's first
//     RESOURCE_EXHAUSTED; DbxtopEndpointExhausted becomes active once the
//     probe's refusal gives evidence, never before the first refusal;
//     from the first page on, a critical alert for the endpoint stays
//     active in Prometheus, and no notification resolves one;
//   - the demo with owner activity, 10× faster (context "orders", one
//     warehouse): an orphan storm of at least ten orphans reaches the
//     receiver as one notification holding one alert;
//   - every notification carries a non-empty workspace, and every query
//     of every dashboard panel returns data from that Prometheus.
func TestAlertsReachAlertmanager(t *testing.T) {
	budget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	r := startAlertmanager(t, ctx)
	vector, unit, unitWS := startUnitModeServe(t, ctx)
	orders, warehouse, fleet, fleetTarget := startOrdersServe(t, ctx)
	r.startPrometheus(t, unit, fleetTarget)
	reaped := newReapedCounter(orders, warehouse)

	r.checkCapacityAlerts(t, vector, unitWS, reaped)
	r.checkOrphanStorm(t, reaped, warehouse)
	for _, n := range r.rec.all() {
		for _, a := range n.Alerts {
			if a.Labels["workspace"] == "" && a.Labels["e2e_sentinel"] == "" {
				t.Errorf("a notification to %s carries an alert without a workspace: %v", n.Receiver, a.Labels)
			}
		}
	}
	r.checkDashboard(t)
	if code, _ := fleet.signalAndWait(syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("serve exit %d after SIGTERM\n%s", code, fleet.stderr)
	}
}

// startUnitModeServe runs vector-incident and a serve as the shipped
// unit runs it, without the proxy: the workspace from
// DATABRICKS_CONFIG_FILE's profile, no --context, the read token from a
// file; with --capacity-probe. The workspace label is then the host's
// name.
func startUnitModeServe(t *testing.T, ctx context.Context) (*sim.Server, serveTarget, string) {
	vector, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioVectorIncident})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vector.Close(context.Background()) })
	home := t.TempDir()
	cfg := filepath.Join(home, "databrickscfg")
	tokenFile := filepath.Join(home, "serve-token")
	const token = "unit-mode-read-token-0123456789"
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[DEFAULT]\nhost = %s\ntoken = %s\n", vector.URL(), vector.Token())), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"DATABRICKS_CONFIG_FILE=" + cfg, "DATABRICKS_CONFIG_PROFILE=DEFAULT", "STATE_DIRECTORY=" + home}
	p := start(t, home, env, "serve", "--listen", "127.0.0.1:0", "--serve-token-file", tokenFile, "--refresh", "1s", "--capacity-probe")
	first := p.waitFirstLine(30 * time.Second)
	listen, ok := strings.CutPrefix(first, "listen=")
	if !ok {
		t.Fatalf("unit-mode serve's first line %q", first)
	}
	u, err := url.Parse(vector.URL())
	if err != nil {
		t.Fatal(err)
	}
	return vector, serveTarget{job: "unit", listen: listen, token: token}, u.Host
}

// startOrdersServe runs the demo with owner activity, 10× faster, and a
// serve for it by context ("orders").
func startOrdersServe(t *testing.T, ctx context.Context) (*sim.Server, string, *proc, serveTarget) {
	// Lenient handles: serve reads the owner's activity through handles it
	// rebuilds from statement ids (no proxy in this rig), which a strict
	// server refuses.
	orders, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioDemo, Warehouses: 1, Speed: 10, OwnerActivity: true, LenientHandles: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orders.Close(context.Background()) })
	home := t.TempDir()
	cfgDir := filepath.Join(home, ".config", "dbxtop")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	prof := fmt.Sprintf("[orders]\nhost = %s\ntoken = %s\n", orders.URL(), orders.Token())
	if err := os.WriteFile(filepath.Join(home, ".databrickscfg"), []byte(prof), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[contexts.orders]\nprofile = \"orders\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The demo's idle timeout is 90 s / 10.
	p := start(t, home, nil, "serve", "--context", "orders", "--listen", "127.0.0.1:0", "--refresh", "1s",
		"--inactivity-warn", "1s", "--server-idle-timeout", "9s")
	first := p.waitFirstLine(30 * time.Second)
	var listen, token string
	if n, _ := fmt.Sscanf(first, "listen=%s token=%s", &listen, &token); n != 2 {
		t.Fatalf("first line %q", first)
	}
	return orders, orders.WarehouseIDs()[0], p, serveTarget{job: "fleet", listen: listen, token: token}
}

// reapedCounter counts the storm's orphans from the simulator's truth as
// they are reaped (finished operations leave the truth after a while).
type reapedCounter struct {
	mu        sync.Mutex
	sim       *sim.Server
	warehouse string
	seen      map[string]bool
}

func newReapedCounter(s *sim.Server, warehouse string) *reapedCounter {
	return &reapedCounter{sim: s, warehouse: warehouse, seen: map[string]bool{}}
}

func (c *reapedCounter) count() int {
	ops := c.sim.Truth().Operations
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range ops {
		if o.ClientKind == "abandons" && o.WarehouseID == c.warehouse && strings.Contains(o.ErrorMessage, "inactivity") {
			c.seen[o.StatementID] = true
		}
	}
	return len(c.seen)
}

// endpointAlerts are the capacity alerts of one endpoint.
var endpointAlerts = map[string]bool{"DbxtopEndpointFullWithin10Minutes": true, "DbxtopEndpointCapacityCritical": true,
	"DbxtopEndpointExhausted": true, "DbxtopEndpointNearCapacity": true, "DbxtopEndpointFullWithinADay": true}

// checkCapacityAlerts: the forecast's activeAt precedes the first refusal;
// Exhausted's does not; a critical endpoint alert stays active from the
// first page on; and the endpoint's notifications, up to a sentinel,
// resolve nothing and start with the forecast's page.
func (r *alertRig) checkCapacityAlerts(t *testing.T, vector *sim.Server, ws string, reaped *reapedCounter) {
	mine := func(a map[string]string) bool {
		return a["workspace"] == ws && a["endpoint"] == sim.IncidentEndpoint && endpointAlerts[a["alertname"]]
	}
	activeAt := map[string]time.Time{}
	paged, lapsed := false, false
	var refusedAt time.Time
	awaitCond(t, r.ctx, "DbxtopEndpointExhausted firing for "+ws+"/"+sim.IncidentEndpoint, r.log, func() bool {
		reaped.count()
		critical, exhausted := false, false
		for _, a := range r.alerts(t) {
			if !mine(a.Labels) {
				continue
			}
			if _, ok := activeAt[a.Labels["alertname"]]; !ok {
				activeAt[a.Labels["alertname"]] = a.ActiveAt
			}
			if a.State == "firing" && a.Labels["severity"] == "critical" {
				critical = true
				exhausted = exhausted || a.Labels["alertname"] == "DbxtopEndpointExhausted"
			}
		}
		if paged && !critical && !lapsed {
			lapsed = true
			t.Errorf("no critical alert for %s/%s is firing after the first page (first refusal: %v)", ws, sim.IncidentEndpoint, refusedAt)
		}
		paged = paged || critical
		for _, e := range vector.Truth().Endpoints {
			if e.Name == sim.IncidentEndpoint && e.FirstRefusedAt != nil {
				refusedAt = *e.FirstRefusedAt
			}
		}
		return exhausted && !refusedAt.IsZero()
	})
	full, ok := activeAt["DbxtopEndpointFullWithin10Minutes"]
	if !ok || !full.Before(refusedAt) {
		t.Errorf("DbxtopEndpointFullWithin10Minutes active at %v (seen: %v), not before the first refusal at %v", full, ok, refusedAt)
	}
	// Prometheus stamps a scrape at its start, aligned by up to 2 ms, in
	// milliseconds: evidence gathered after the refusal cannot be
	// stamped more than that before it.
	if ex := activeAt["DbxtopEndpointExhausted"]; ex.Add(10 * time.Millisecond).Before(refusedAt) {
		t.Errorf("DbxtopEndpointExhausted active at %v, before the first refusal at %v: evidence before the fact", ex, refusedAt)
	}
	t.Logf("forecast active %v before the first refusal; Exhausted active %v after it",
		refusedAt.Sub(full).Round(time.Second), activeAt["DbxtopEndpointExhausted"].Sub(refusedAt).Round(time.Second))

	before := r.untilSentinel(t, func(n amNotification) bool {
		return n.GroupLabels["workspace"] == ws && n.GroupLabels["endpoint"] == sim.IncidentEndpoint
	})
	for i, n := range before {
		for _, a := range n.Alerts {
			if a.Status != "firing" {
				t.Errorf("notification %d for %s/%s resolves %s while writes are refused", i, ws, sim.IncidentEndpoint, a.Labels["alertname"])
			}
		}
	}
	if len(before) == 0 || before[0].Alerts[0].Labels["alertname"] != "DbxtopEndpointFullWithin10Minutes" {
		t.Errorf("the endpoint's first notification is not DbxtopEndpointFullWithin10Minutes: %+v", before)
	}
}

// checkOrphanStorm: at least ten orphans reaped on the warehouse reach
// the receiver as one notification holding one alert, proven by a
// sentinel added to its group after them.
func (r *alertRig) checkOrphanStorm(t *testing.T, reaped *reapedCounter, warehouse string) {
	awaitCond(t, r.ctx, "ten orphans reaped on the warehouse", r.log, func() bool { return reaped.count() >= 10 })
	n := reaped.count()
	before := r.untilSentinel(t, func(n amNotification) bool {
		return n.GroupLabels["workspace"] == "orders" && n.GroupLabels["warehouse"] == warehouse
	})
	if len(before) != 1 || len(before[0].Alerts) != 1 || before[0].Status != "firing" {
		t.Errorf("%d orphans reaped on orders/%s: want one firing notification with one alert, got %d: %+v", n, warehouse, len(before), before)
		return
	}
	t.Logf("%d orphans reaped on orders/%s: one notification (%s to %s)", n, warehouse, before[0].Alerts[0].Labels["alertname"], before[0].Receiver)
}

// checkDashboard: every dashboard panel's queries return data.
func (r *alertRig) checkDashboard(t *testing.T) {
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
			awaitCond(t, r.ctx, fmt.Sprintf("data for panel %q: %s", p.Title, q), r.log, func() bool { return promQuery(t, r.promURL, q) > 0 })
		}
	}
	t.Logf("%d dashboard queries returned data", queries)
}

func httpIsOK(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestProxyUnitWarnsBeforeReap: the team set-up of docs/fleet.md — the
// proxy unit in front of the workspace, the serve unit reading it, both
// with their own command lines, environments and credentials — against
// the demo (its proxied clients go through the unit's proxy; the server
// volunteers no owner activity, as a real one): a page about an abandoned
// statement reaches the receiver before the server reaps it. The first
// proxied client to give up is the one checked: its reap cannot come
// before its last call plus the server's idle timeout.
func TestProxyUnitWarnsBeforeReap(t *testing.T) {
	budget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := startAlertmanager(t, ctx)
	serveStart, serveEnv, _ := readUnit(t, serveUnitPath, "serve")
	proxyStart, proxyEnv, _ := readUnit(t, proxyUnitPath, "proxy")
	home := t.TempDir()
	creds := filepath.Join(home, "credentials")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	const read, admin = "team-read-token-0123456789", "team-proxy-token-0123456789"
	for name, content := range map[string]string{"serve-token": read, "act-token": "team-act-token-0123456789", "proxy-token": admin} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unitEnv := func(lines []string) []string {
		env := []string{"STATE_DIRECTORY=" + t.TempDir(), "CREDENTIALS_DIRECTORY=" + creds}
		for _, e := range lines {
			env = append(env, strings.ReplaceAll(e, "%d", creds))
		}
		return env
	}
	const idle = 75 * time.Second
	var adminURL string
	startProxy := func(upstream string) (string, error) {
		args := unitArgs(proxyStart, creds, map[string]string{"127.0.0.1:8444": "127.0.0.1:0", "127.0.0.1:8445": "127.0.0.1:0"})
		for i := 1; i < len(args); i++ {
			if args[i-1] == "--upstream" {
				args[i] = upstream
			}
		}
		px := start(t, home, unitEnv(proxyEnv), args...)
		var listen string
		for _, f := range strings.Fields(px.waitFirstLine(30 * time.Second)) {
			if v, ok := strings.CutPrefix(f, "listen="); ok {
				listen = v
			}
			if v, ok := strings.CutPrefix(f, "admin="); ok {
				adminURL = v
			}
		}
		return listen, nil
	}
	demo, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioDemo, Warehouses: 1, IdleTimeout: idle, Proxy: startProxy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = demo.Close(context.Background()) })
	if adminURL == "" {
		t.Fatal("the demo started no proxy through the unit")
	}
	cfg := fmt.Sprintf("[DEFAULT]\nhost = %s\ntoken = %s\n", demo.URL(), demo.Token())
	if err := os.WriteFile(filepath.Join(creds, "databrickscfg"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := unitArgs(serveStart, creds, map[string]string{"127.0.0.1:9464": "127.0.0.1:0", "http://127.0.0.1:8445": adminURL})
	p := start(t, home, unitEnv(serveEnv), append(args, "--refresh", "1s", "--inactivity-warn", "10s", "--server-idle-timeout", idle.String())...)
	listen, ok := strings.CutPrefix(p.waitFirstLine(30*time.Second), "listen=")
	if !ok {
		t.Fatal("serve's first line names no listen address")
	}
	r.startPrometheus(t, serveTarget{job: "team", listen: listen, token: read})

	// The first proxied client that gave up, once reaped: its reap came
	// no earlier than its last call plus the idle timeout.
	var reapFrom time.Time
	var id string
	awaitCond(t, ctx, "a proxied gives_up statement reaped", r.log, func() bool {
		for _, o := range demo.Truth().Operations {
			if o.ClientKind == sim.KindGivesUp && o.ErrorMessage == sim.InactivityMessage {
				id, reapFrom = o.StatementID, o.OwnerLastActivity.Add(idle)
				return true
			}
		}
		return false
	})
	var page *amNotification
	for _, n := range r.rec.all() {
		for _, a := range n.Alerts {
			name := a.Labels["alertname"]
			if page == nil && a.Status == "firing" && (name == "DbxtopOrphanReapImminent" || name == "DbxtopOrphanAboutToBeReaped") {
				page = &n
			}
		}
	}
	if page == nil || !page.at.Before(reapFrom) {
		t.Fatalf("no warning about an orphan before %s's reap (not before %v): %+v\nserve:\n%s", id, reapFrom, page, p.stderr)
	}
	t.Logf("%s to %s %v before %s could be reaped", page.Alerts[0].Labels["alertname"], page.Receiver, reapFrom.Sub(page.at).Round(time.Second), id)
}
