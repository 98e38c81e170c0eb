package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// serve exports the proxy's account: the capacity refusals a client met
// through the proxy, and the rows written through it per minute.
func TestServeExportsProxiedRefusals(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close(context.Background()) }()
	px, err := proxy.Start(ctx, proxy.Options{Upstream: srv.URL(), UserAgent: "dbxtop-proxy/test"},
		proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = px.Close(context.Background()) }()
	upsert := func(rows string) int {
		req, _ := http.NewRequest(http.MethodPost, px.URL()+"/api/2.0/vector-search/indexes/main.support.tickets_idx/upsert-data",
			strings.NewReader(`{"inputs_json":"`+rows+`"}`))
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := upsert(`[{\"id\":\"1\"},{\"id\":\"2\"}]`); code != 200 {
		t.Fatalf("upsert: HTTP %d", code)
	}
	f, _ := sim.ParseFaults("exhausted=vs-prod")
	srv.SetFaults(f)
	if code := upsert(`[{\"id\":\"3\"}]`); code != 429 {
		t.Fatalf("refused upsert: HTTP %d", code)
	}

	rest, err := databricks.New(ctx, databricks.Config{Host: srv.URL(), Token: srv.Token(), UserAgent: "dbxtop/test"})
	if err != nil {
		t.Fatal(err)
	}
	defer rest.CloseIdleConnections()
	admin, err := adminapi.NewAdminClient(px.AdminURL(), px.AdminToken(), "dbxtop/test")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.CloseIdleConnections()
	c := NewCounters()
	eng := poller.NewEngine(poller.Options{Discoverer: rest, Status: rest, Capacity: adminapi.MergeCapacity(admin, rest),
		Refresh: 200 * time.Millisecond, ReadOnly: true, Workspace: model.Workspace{Host: srv.URL()},
		Policy: retry.PolicyOptions{Observe: c.Observer("ws"), Done: c.Done("ws")}})
	fleet := poller.NewFleet(time.Hour, poller.Member{Name: "ws", Engine: eng})
	s, err := New(Options{Listen: "127.0.0.1:0", Fleet: fleet, Counters: c, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan struct{}, 2)
	go func() { _ = fleet.Run(ctx); runDone <- struct{}{} }()
	go func() { _ = s.Run(ctx); runDone <- struct{}{} }()
	defer func() { cancel(); <-runDone; <-runDone }()

	var body string
	await(t, "the proxied series", func() bool {
		_, body = get(t, s.URL()+"/metrics", s.Token())
		return strings.Contains(body, `dbxtop_endpoint_capacity_refusals_total{endpoint="vs-prod",workspace="ws"} 1`)
	})
	for _, want := range []string{
		"# TYPE dbxtop_endpoint_capacity_refusals_total counter",
		`dbxtop_endpoint_capacity_refusals_total{endpoint="vs-analytics",workspace="ws"} 0`,
		`dbxtop_endpoint_proxied_written_rows_per_second{endpoint="vs-prod",workspace="ws"} `,
		`dbxtop_endpoint_exhausted{endpoint="vs-prod",workspace="ws"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
