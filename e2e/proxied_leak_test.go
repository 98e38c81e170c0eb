package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestSnapshotFlagsAProxiedLeakPastTheIdleTimeout: a client behind
// `dbxtop proxy` leaves its ended statement open on a strict server; ten
// minutes after the end (past --server-idle-timeout, 7m10s) the proxy's
// proof that it is open still holds, because the server's reaper of ended
// operations (--server-leak-timeout, 23m, from the later of the end and
// the client's last call) could not have acted: `snapshot --proxy` shows
// it UNCLOSED, its openness on the proxy's word (evidence.open.source).
// The simulator's clock runs ten minutes behind, so the statement ended
// long ago without waiting, and stands still, so its reapers do not act.
func TestSnapshotFlagsAProxiedLeakPastTheIdleTimeout(t *testing.T) {
	t.Parallel()
	budget(t)
	clk := sim.NewManualClock(time.Now().Add(-10 * time.Minute))
	srv := startSimServer(t, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1, Clock: clk})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	px := startProxy(ctx, t, proxy.Options{Upstream: srv.URL(), Heal: true})
	owner, err := thrift.NewClient(thrift.Options{Host: px.URL(), Token: srv.Token(), UserAgent: "LeakyDriver/1.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.CloseIdleConnections)
	sess, err := owner.OpenSession(ctx, srv.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	ids := leakEndedOn(ctx, t, clk, owner, sess, 1)
	time.Sleep(2500 * time.Millisecond) // past --leak-after (2s) by the wall clock too
	r := run(t, runOpts{args: []string{"snapshot", "--json", "--host", srv.URL(), "--proxy", px.AdminURL(), "--leak-after", "2s"},
		env: []string{"DATABRICKS_TOKEN=" + srv.Token(), "DBXTOP_PROXY_TOKEN=" + px.AdminToken()}, timeout: 30 * time.Second})
	var s struct {
		Operations []struct {
			StatementID string       `json:"statement_id"`
			Open        *bool        `json:"open"`
			Flags       []model.Flag `json:"flags"`
			Evidence    struct {
				Open *struct {
					Source string `json:"source"`
				} `json:"open"`
			} `json:"evidence"`
			StatusNote string `json:"status_note"`
		} `json:"operations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("exit %d: %v\nstdout %s\nstderr %s", r.code, err, r.stdout, r.stderr)
	}
	for _, o := range s.Operations {
		if o.StatementID != ids[0] {
			continue
		}
		unclosed := false
		for _, f := range o.Flags {
			unclosed = unclosed || f.Kind == model.FlagUnclosed
		}
		if !unclosed || o.Open == nil || !*o.Open || o.Evidence.Open == nil || o.Evidence.Open.Source != model.EvidenceViaProxy {
			t.Errorf("the proxied leak, ended 10 minutes ago: open %v, flags %+v, evidence %+v, note %q; want UNCLOSED, open on the proxy's word",
				o.Open, o.Flags, o.Evidence.Open, o.StatusNote)
		}
		return
	}
	t.Fatalf("the proxied leak %s is not in the snapshot:\n%s\n%s", ids[0], r.stdout, r.stderr)
}
