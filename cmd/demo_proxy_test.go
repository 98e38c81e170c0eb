package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// TestDemoProxiedShare runs the demo scenario (10× faster) with the
// embedded proxy exactly as demo wires it, and dbxtop's sources as the TUI
// connects them (--proxy merged in): the proxied client that gives up on
// its own side shows INACTIVE, and the proxied client whose close the
// server refuses shows CLOSE_FAILED naming the client, and the proxied
// client that never closes its finished operation shows UNCLOSED on the
// proxy's evidence — on a strict server that volunteers no owner activity
// and whose Statement Execution API does not answer for Thrift statements.
func TestDemoProxiedShare(t *testing.T) {
	testenv.Long(t, "runs the demo timeline")
	// Each flag shows for a window of the demo's timeline (INACTIVE: from
	// --inactivity-warn of silence to the server's reaper), which must be
	// longer than one round of the engine: under -race on a loaded machine
	// a round took 8–16 s, longer than the 7.5 s window at 10×. At 3× it is
	// 25 s, and a gives_up client starts every 25 s.
	const speed = 3
	scaled := func(d time.Duration) time.Duration { return d / speed }
	// Generous deadlines: each wait ends when its condition holds (within
	// 30 s of demo time at rest), and a loaded machine may take many times
	// that.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var px embeddedProxy
	defer px.close()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioDemo, Speed: speed, Seed: 1,
		Proxy: px.hook(ctx)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	if px.srv == nil {
		t.Fatal("the demo ran no embedded proxy")
	}
	ws := WorkspaceConfig{Host: srv.URL(), Token: srv.Token(), Proxies: []string{px.srv.AdminURL()}, ProxyToken: px.srv.AdminToken()}
	c, err := connect(ctx, ws, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	th := model.Thresholds{InactivityWarn: scaled(sim.DemoInactivityWarn), ServerIdleTimeout: scaled(sim.DemoServerIdleTimeout),
		LeakAfter: scaled(sim.DemoLeakAfter)}
	eng := poller.NewEngine(poller.Options{Discoverer: c.disc, Status: c.status, Actions: c.actions, Thresholds: th,
		Refresh: 500 * time.Millisecond, Workspace: model.Workspace{Host: srv.URL()}, Idle: c.idle, ReadOnly: true})

	kinds := func(kind string) map[string]bool {
		ids := map[string]bool{}
		for _, o := range srv.Truth().Operations {
			if o.ClientKind == kind {
				ids[o.StatementID] = true
			}
		}
		return ids
	}
	var inactive, clientCloseFailed, unclosed bool
	noEvidence := map[string]string{} // direct close_fails operations UNCLOSED: nothing tells dbxtop they are open
	// The ingest client's refusal reaches dbxtop through the proxy, whose
	// account of it lasts a window of the demo's timeline: it is looked
	// for in the same rounds as the flags, so a slow machine cannot miss it.
	var via string
	deadline := time.Now().Add(6 * time.Minute)
	for !(inactive && clientCloseFailed && unclosed && via != "") && time.Now().Before(deadline) {
		if err := eng.RunOnce(ctx); err != nil {
			t.Logf("round: %v", err)
		}
		if via == "" {
			via = exhaustedVia(ctx, t, c)
		}
		gives, closes, leaks := kinds(sim.KindGivesUp), kinds(sim.KindCloseFailsProxied), kinds(sim.KindLeaksProxied)
		direct := kinds(sim.KindCloseFails)
		for _, o := range eng.Snapshot().Operations {
			if direct[o.StatementID] && o.HasFlag(model.FlagUnclosed) {
				noEvidence[o.StatementID] = o.StatusSource + ": " + o.StatusNote
			}
			if leaks[o.StatementID] && o.HasFlag(model.FlagUnclosed) && strings.Contains(o.StatusNote, "open per dbxtop proxy") {
				unclosed = true
			}
			for _, f := range o.Flags {
				if gives[o.StatementID] && f.Kind == model.FlagInactive && o.Proxy != nil {
					inactive = true
				}
				if closes[o.StatementID] && f.Kind == model.FlagCloseFailed && strings.Contains(f.Detail, "client's close failed") {
					clientCloseFailed = true
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !inactive || !clientCloseFailed || !unclosed {
		t.Fatalf("within the demo timeline: INACTIVE for the proxied gives_up client %v, client CLOSE_FAILED %v, UNCLOSED for the proxied leaks_proxied client %v",
			inactive, clientCloseFailed, unclosed)
	}
	for id, status := range noEvidence {
		t.Errorf("direct close_fails %s UNCLOSED without evidence (status %s)", id, status)
	}
	if st := px.srv.Stats(); st.Requests == 0 || st.ClosesQueued == 0 {
		t.Errorf("proxy stats %+v", st)
	}
	// vs-prod EXHAUSTED via the proxy, and no write of dbxtop's (the
	// incident writer's is proven in proxy/vector_test.go, at its own pace).
	if via != model.LearnedViaProxy {
		t.Errorf("%s exhausted via %q, want via the proxy", sim.IngestEndpoint, via)
	}
	if w := srv.Stats().ObserverWrites; len(w) != 0 {
		t.Errorf("dbxtop wrote to indexes: %v", w)
	}
}

// exhaustedVia is how dbxtop learned that the demo's ingest endpoint is
// exhausted, with the refusal's request id ("" while it has not).
func exhaustedVia(ctx context.Context, t *testing.T, c *conn) string {
	t.Helper()
	eps, err := c.capacity.Endpoints(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		if ep.Name == sim.IngestEndpoint && ep.Exhausted && ep.LastError != nil && ep.LastError.RequestID != "" {
			return ep.ExhaustedVia
		}
	}
	return ""
}
