package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// The SDK starts an opencensus worker at init; it is not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// workspace builds one engine on a real REST client against host.
func workspace(t *testing.T, ctx context.Context, name, host, token string, c *Counters) poller.Member {
	t.Helper()
	return workspaceRW(t, ctx, name, host, token, c, true)
}

// workspaceRW is workspace, read-only or not.
func workspaceRW(t *testing.T, ctx context.Context, name, host, token string, c *Counters, readOnly bool) poller.Member {
	t.Helper()
	rest, err := databricks.New(ctx, databricks.Config{Host: host, Token: token, UserAgent: "dbxtop/test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rest.CloseIdleConnections)
	eng := poller.NewEngine(poller.Options{Discoverer: rest, Status: rest, Actions: rest, Capacity: rest,
		Refresh: 200 * time.Millisecond, ReadOnly: readOnly, Workspace: model.Workspace{Host: host},
		Policy: retry.PolicyOptions{Observe: c.Observer(name), Done: c.Done(name),
			Default: retry.Limit{Attempts: 1}, Limits: map[string]retry.Limit{poller.CallDiscover: {Attempts: 1}, "ListQueries": {Attempts: 1}, "ListEndpoints": {Attempts: 1}}}})
	return poller.Member{Name: name, Engine: eng}
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

// liveAndDead starts a quiet simulator (closed when the test ends) and
// names a loopback URL nothing listens on: a workspace up and one down.
func liveAndDead(t *testing.T, ctx context.Context) (*sim.Server, string) {
	t.Helper()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	return srv, deadURL
}

// await polls cond until it holds or a generous deadline passes.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeTwoWorkspacesOneDown: one real simulated workspace and one
// whose host refuses connections. The live one is observed, the dead one
// reported down, and every endpoint but /healthz wants the token.
func TestServeTwoWorkspacesOneDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, deadURL := liveAndDead(t, ctx)
	c := NewCounters()
	fleet := poller.NewFleet(time.Hour, workspace(t, ctx, "live", srv.URL(), srv.Token(), c), workspace(t, ctx, "down", deadURL, "x", c))
	s, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, Counters: c, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.FirstLine(), "listen=http://127.0.0.1:") || !strings.HasSuffix(s.FirstLine(), " token="+s.Token()) || len(s.Token()) != 32 {
		t.Fatalf("first line %q", s.FirstLine())
	}
	runDone := make(chan struct{}, 2)
	go func() { _ = fleet.Run(ctx); runDone <- struct{}{} }()
	go func() { _ = s.Run(ctx); runDone <- struct{}{} }()
	defer func() { cancel(); <-runDone; <-runDone }()

	// The event stream is subscribed before anything is expected on it.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("events: %v %v", err, stream)
	}
	defer stream.Body.Close()

	for _, path := range []string{"/metrics", "/api/v1/snapshot", "/api/v1/events", "/api/v1/health"} {
		if code, body := get(t, s.URL()+path, ""); code != http.StatusUnauthorized || strings.Contains(body, s.Token()) {
			t.Errorf("%s without token: %d %s", path, code, body)
		}
		if code, _ := get(t, s.URL()+path, "wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d", path, code)
		}
	}
	if code, body := get(t, s.URL()+"/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}

	// The probes need no token, and readyz says only counts.
	var ready string
	await(t, "readyz", func() bool { code, body := get(t, s.URL()+"/readyz", ""); ready = body; return code == 200 })
	if ready != `{"ready":true,"workspaces":2,"up":1}`+"\n" {
		t.Errorf("readyz body %q", ready)
	}
	var snap model.Snapshot
	await(t, "a snapshot with both workspaces", func() bool {
		_, body := get(t, s.URL()+"/api/v1/snapshot", s.Token())
		if err := json.Unmarshal([]byte(body), &snap); err != nil {
			t.Fatalf("snapshot JSON: %v\n%s", err, body)
		}
		return len(snap.Workspaces) == 2 && snap.Workspaces[0].Up && !snap.Workspaces[1].Up
	})
	if snap.Workspaces[1].Name != "down" || len(snap.Workspaces[1].Errors) == 0 || snap.Workspaces[1].Errors[0].Workspace != "down" {
		t.Fatalf("down workspace: %+v", snap.Workspaces[1])
	}

	var metrics string
	await(t, "metrics for both workspaces", func() bool {
		_, metrics = get(t, s.URL()+"/metrics", s.Token())
		return strings.Contains(metrics, `dbxtop_observe_up{workspace="live"} 1`) &&
			strings.Contains(metrics, `dbxtop_observe_up{workspace="down"} 0`) &&
			strings.Contains(metrics, `dbxtop_endpoint_row_limit_source{endpoint="vs-prod",source="tag",workspace="live"} 1`) &&
			regexp.MustCompile(`dbxtop_calls_total\{call="\w+",outcome="transport",workspace="down"\} [1-9]`).MatchString(metrics) &&
			regexp.MustCompile(`dbxtop_calls_total\{call="\w+",outcome="ok",workspace="live"\} [1-9]`).MatchString(metrics)
	})
	for _, line := range strings.Split(metrics, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "dbxtop_") && !strings.HasPrefix(line, "process_") && !strings.HasPrefix(line, "go_") {
			t.Errorf("series not named dbxtop_…, process_… or go_…: %s", line)
		}
	}
	for _, want := range []string{"dbxtop_retry_budget_tokens{workspace=\"live\"}",
		// The exporter conventions: build info, process and Go runtime.
		`dbxtop_build_info{goarch="` + runtime.GOARCH + `",goos="` + runtime.GOOS + `",goversion="go`, "process_cpu_seconds_total ", "go_goroutines ",
		// Every endpoint flag is a series, 0 until raised.
		`dbxtop_endpoint_flag{endpoint="vs-prod",flag="EXHAUSTED",severity="critical",workspace="live"} 0`,
		// Capacity: the limit's source, throughput utilisation, write rate.
		`dbxtop_endpoint_throughput_utilization_ratio{endpoint="vs-prod",workspace="live"} 0.23`,
		`dbxtop_endpoint_write_rows_per_second{endpoint="vs-prod",workspace="live"} 0`,
		`dbxtop_endpoint_row_limit{endpoint="vs-prod",workspace="live"} 200000`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// The give-up of the dead workspace arrives on the stream, tagged.
	sc := bufio.NewScanner(stream.Body)
	found := false
	for !found && sc.Scan() {
		var ev EventJSON
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		found = ev.Kind == string(model.EventGiveUp) && ev.Workspace == "down"
	}
	if !found {
		t.Fatalf("no give-up event for the dead workspace: %v", sc.Err())
	}

	// Read-only serve refuses actions, whoever asks.
	req, _ = http.NewRequest(http.MethodPost, s.URL()+"/api/v1/operations/01234567-89ab-cdef-0123-456789abcdef/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("action on read-only serve: %d", resp.StatusCode)
	}
}

func TestLabelBounds(t *testing.T) {
	l := newClientLimiter()
	for i := 0; i < maxClientLabels; i++ {
		if got := l.label("prod", fmt.Sprintf("app %d", i)); got == otherClient {
			t.Fatalf("label %d became other too early", i)
		}
	}
	if got := l.label("prod", "one too many"); got != otherClient {
		t.Fatalf("label past the cap: %q", got)
	}
	// The cap is per workspace: prod's many clients leave staging's names.
	if got := l.label("staging", "one too many"); got != "one too many" {
		t.Fatalf("another workspace's label capped by prod's: %q", got)
	}
	if got := label("evil\x1b[31mred\u202e" + strings.Repeat("a", 200)); strings.ContainsAny(got, "\x1b\u202e") || len(got) > maxLabelLen+len("…") {
		t.Fatalf("label not sanitised or bounded: %q", got)
	}
}

// TestAttachClient: the attach client sees serve's snapshot, health and
// events, and its actions obey serve's --read-only.
func TestAttachClient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close(context.Background()) }()
	c := NewCounters()
	fleet := poller.NewFleet(time.Hour, workspace(t, ctx, "live", srv.URL(), srv.Token(), c))
	s, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, Counters: c, Refresh: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 3)
	go func() { _ = fleet.Run(ctx); done <- struct{}{} }()
	go func() { _ = s.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done; <-done }()

	if _, err := Attach(ctx, s.URL(), "wrong", "", nil); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "bearer token") {
		t.Fatalf("wrong token: %v", err)
	}
	cl, err := Attach(ctx, s.URL(), s.Token(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cl.Run(ctx); done <- struct{}{} }()
	if !cl.ReadOnly() {
		t.Fatal("serve is read-only; the client must say so")
	}
	if cl.Refresh() != 7*time.Second {
		t.Fatalf("attached client reads serve's refresh as %s, want 7s", cl.Refresh())
	}
	await(t, "a snapshot through serve", func() bool { return cl.Snapshot().Workspace.Host == srv.URL() })
	await(t, "health through serve", func() bool { return cl.Health().DiscoveryUp })
	err = cl.Cancel(ctx, "01234567-89ab-cdef-0123-456789abcdef")
	if !errors.Is(err, poller.ErrReadOnly) {
		t.Fatalf("cancel through a read-only serve: %v", err)
	}
	// serve going away: the last snapshot comes back with an error saying so.
	last := cl.Snapshot()
	_ = s.http.Close()
	got := cl.Snapshot()
	if len(got.Errors) != len(last.Errors)+1 || got.Errors[len(got.Errors)-1].Call != "attach" {
		t.Fatalf("unreachable serve not reported: %+v", got.Errors)
	}
}

// TestCountersBornAtZero: a client's orphan and leak counters exist at 0
// from the first time dbxtop sees one of its statements, so the
// increase() of its first orphan is 1, not lost in a series born at 1.
func TestCountersBornAtZero(t *testing.T) {
	c := NewCounters()
	op := &model.Operation{StatementID: "s1", WarehouseID: "w1", ClientApplication: "Databricks JDBC 2.6.36"}
	running := model.NamedSnapshot{Name: "prod", Snapshot: model.Snapshot{Operations: []*model.OperationView{{Operation: op}}}}
	c.reconcile([]model.NamedSnapshot{running})
	orphans := c.orphans.WithLabelValues("prod", "Databricks JDBC 2.6.36")
	if n := testutil.CollectAndCount(c.orphans); n != 1 || testutil.ToFloat64(orphans) != 0 {
		t.Fatalf("orphan counter before the first orphan: %d series, value %v", n, testutil.ToFloat64(orphans))
	}
	if n := testutil.CollectAndCount(c.leaks); n != 2 {
		t.Fatalf("leak counters before the first leak: %d series, want UNCLOSED and CLOSE_FAILED", n)
	}
	reaped := model.NamedSnapshot{Name: "prod", Snapshot: model.Snapshot{Operations: []*model.OperationView{
		{Operation: op, Flags: []model.Flag{{Kind: model.FlagReaped, Severity: model.SeverityWarning}}}}}}
	c.reconcile([]model.NamedSnapshot{reaped})
	c.reconcile([]model.NamedSnapshot{reaped})
	if v := testutil.ToFloat64(orphans); v != 1 {
		t.Fatalf("one reaped statement counted %v times", v)
	}

	// A call's give-up and retry series are born at 0 with its first
	// call, so the first failure is an increase.
	c.Done("prod")(retry.Call{Name: "ProxyOperations"}, 1, nil)
	c.Done("prod")(retry.Call{Name: "ListQueries"}, 1, nil)
	// Two calls made so far (the proxy's and ListQueries), none failed.
	if n := testutil.CollectAndCount(c.giveUps); n != 2*len(bornKinds) {
		t.Fatalf("give-up series after two calls: %d, want %d (born at 0)", n, 2*len(bornKinds))
	}
	for _, kind := range bornKinds {
		if v := testutil.ToFloat64(c.giveUps.WithLabelValues("prod", "ListQueries", string(kind))); v != 0 {
			t.Fatalf("give-ups of ListQueries (%s) before any: %v", kind, v)
		}
	}
}

// TestFlagSeries: operation flags by warehouse and endpoint flags are
// series at 0 for what dbxtop shows, 1 (or the count) when raised.
func TestFlagSeries(t *testing.T) {
	op := &model.Operation{StatementID: "s1", WarehouseID: "w1"}
	ws := model.NamedSnapshot{Name: "prod", Up: true, Snapshot: model.Snapshot{
		Operations: []*model.OperationView{{Operation: op, Flags: []model.Flag{{Kind: model.FlagInactive, Severity: model.SeverityWarning}}}},
		Endpoints: []model.EndpointView{{Endpoint: model.Endpoint{Name: "vs-prod"},
			Flags: []model.Flag{{Kind: model.FlagCapacity, Severity: model.SeverityCritical}}}},
	}}
	got := map[string]float64{}
	for _, g := range gauges {
		g.emit(ws, poller.Health{}, func(v float64, labels ...string) {
			got[g.name+"{"+strings.Join(labels, ",")+"}"] = v
		})
	}
	for series, want := range map[string]float64{
		"dbxtop_operations_flagged{w1,INACTIVE,warning}":    1,
		"dbxtop_operations_flagged{w1,STALE,critical}":      0,
		"dbxtop_endpoint_flag{vs-prod,CAPACITY,critical}":   1,
		"dbxtop_endpoint_flag{vs-prod,CAPACITY,warning}":    0,
		"dbxtop_endpoint_flag{vs-prod,EXHAUSTED,critical}":  0,
		"dbxtop_endpoint_flag{vs-prod,INDEX_QUOTA,warning}": 0,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
}

// TestTokens: the read token reads but cannot act; the act token acts;
// without an act token serve refuses actions; a token serve was given is
// never on its first line, one it generated is; the probes need none.
func TestTokens(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close(context.Background()) }()
	c := NewCounters()
	fleet := poller.NewFleet(time.Hour, workspaceRW(t, ctx, "live", srv.URL(), srv.Token(), c, false))
	const read, act = "read-token-0123456789", "act-token-0123456789"
	if _, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, Token: read, ActToken: read}); err == nil {
		t.Fatal("one token for reading and acting accepted")
	}
	s, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, Counters: c, Token: read, ActToken: act})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 3)
	go func() { _ = fleet.Run(ctx); done <- struct{}{} }()
	go func() { _ = s.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done; <-done }()
	if got := s.FirstLine(); got != "listen="+s.URL() || strings.Contains(got, read) {
		t.Errorf("first line with a given token: %q", got)
	}

	post := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v1/operations/01234567-89ab-cdef-0123-456789abcdef/cancel", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(read); code != http.StatusForbidden || !strings.Contains(body, "only the act token acts") {
		t.Errorf("cancel with the read token: %d %s", code, body)
	}
	if code, body := post(act); code != http.StatusNotFound {
		t.Errorf("cancel of an unknown statement with the act token: %d %s (want 404 from the engine)", code, body)
	}
	if code, _ := post(""); code != http.StatusUnauthorized {
		t.Errorf("cancel without a token: %d", code)
	}
	for _, tok := range []string{read, act} {
		if code, _ := get(t, s.URL()+"/metrics", tok); code != 200 {
			t.Errorf("metrics with %s: %d", tok, code)
		}
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		await(t, probe+" without a token", func() bool { code, _ := get(t, s.URL()+probe, ""); return code == 200 })
	}

	// attach: read-only without the act token, acting with it.
	cl, err := Attach(ctx, s.URL(), read, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cl.ReadOnly() {
		t.Error("attach without the act token offers actions")
	}
	cl, err = Attach(ctx, s.URL(), read, act, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cl.ReadOnly() {
		t.Error("attach with the act token is read-only")
	}
	if err := cl.Cancel(ctx, "01234567-89ab-cdef-0123-456789abcdef"); err == nil || errors.Is(err, poller.ErrReadOnly) {
		t.Errorf("cancel of an unknown statement through attach: %v", err)
	}

	// Without an act token: actions refused, whoever asks; a generated
	// token is on the first line.
	fleet2 := poller.NewFleet(time.Hour, workspaceRW(t, ctx, "live", srv.URL(), srv.Token(), NewCounters(), false))
	s2, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet2})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s2.Run(ctx); done <- struct{}{} }()
	if got := s2.FirstLine(); got != "listen="+s2.URL()+" token="+s2.Token() {
		t.Errorf("first line with a generated token: %q", got)
	}
	req, _ := http.NewRequest(http.MethodPost, s2.URL()+"/api/v1/operations/x/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+s2.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "--act-token-file") {
		t.Errorf("action on a serve without an act token: %d %s", resp.StatusCode, b)
	}
}

// TestProxyGauges: with several proxies, each has its dbxtop_proxy_up and
// dbxtop_proxy_info series, labelled by host:port; a proxy no longer
// listed has none; dbxtop_proxy_versions counts the versions; without
// proxies no proxy series exist.
func TestProxyGauges(t *testing.T) {
	emit := func(name string, ws model.NamedSnapshot) map[string]float64 {
		out := map[string]float64{}
		for _, g := range gauges {
			if g.name == name {
				g.emit(ws, poller.Health{}, func(v float64, labels ...string) { out[strings.Join(labels, ",")] = v })
			}
		}
		return out
	}
	ws := model.NamedSnapshot{Name: "prod", Snapshot: model.Snapshot{Workspace: model.Workspace{Proxies: []model.ProxyStatus{
		{Name: "127.0.0.2:8445", Up: true, Version: "1.4.0"},
		{Name: "127.0.0.3:8445", Up: false, Reason: "connection refused", Version: "1.5.0"},
		{Name: "127.0.0.4:8445", Up: false, Reason: "not read yet"},
	}}}}
	if got := emit("dbxtop_proxy_up", ws); len(got) != 3 || got["127.0.0.2:8445"] != 1 || got["127.0.0.3:8445"] != 0 || got["127.0.0.4:8445"] != 0 {
		t.Errorf("dbxtop_proxy_up: %v", got)
	}
	if got := emit("dbxtop_proxy_info", ws); len(got) != 3 || got["127.0.0.3:8445,1.5.0"] != 1 || got["127.0.0.4:8445,unknown"] != 1 {
		t.Errorf("dbxtop_proxy_info: %v", got)
	}
	if got := emit("dbxtop_proxy_versions", ws); got[""] != 2 {
		t.Errorf("dbxtop_proxy_versions: %v", got)
	}
	ws.Workspace.Proxies = ws.Workspace.Proxies[:1]
	if got := emit("dbxtop_proxy_up", ws); len(got) != 1 {
		t.Errorf("a proxy no longer listed keeps its series: %v", got)
	}
	ws.Workspace.Proxies = nil
	for _, n := range []string{"dbxtop_proxy_up", "dbxtop_proxy_info", "dbxtop_proxy_versions"} {
		if got := emit(n, ws); len(got) != 0 {
			t.Errorf("%s without --proxy: %v", n, got)
		}
	}
}
