package proxy

import (
	"context"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// TestDbxtopFlagsUnclosedOnTheProxysEvidence: on a strict server (the
// Statement Execution API does not answer for Thrift statements, rebuilt
// handles are refused), a finished operation nobody closed is UNCLOSED
// when its client went through the proxy — the proxy relayed its handle
// and saw no close — and its openness stays unknown when it did not. The
// client's later close clears the flag.
func TestDbxtopFlagsUnclosedOnTheProxysEvidence(t *testing.T) {
	s := startSimWith(t, sim.Options{Scenario: sim.ScenarioQuiet, Seed: 5})
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]

	// The direct leak first: it ended before the proxied one, so when the
	// proxied one is UNCLOSED, the direct one is past --leak-after too.
	direct := client(t, s.URL(), s.Token(), "direct-job/1.0")
	dop := execute(ctx, t, direct, wh, "SELECT 1")
	proxied := client(t, p.URL(), s.Token(), "leaky-job/1.0")
	op := execute(ctx, t, proxied, wh, "SELECT 2")
	waitFor(t, "both statements to finish", 10*time.Second, func() bool {
		a, err1 := direct.GetOperationStatus(ctx, dop.Ref)
		b, err2 := proxied.GetOperationStatus(ctx, op.Ref)
		return err1 == nil && err2 == nil && a.State.Terminal() && b.State.Terminal()
	})

	th := model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 90 * time.Second, LeakAfter: time.Second}
	eng := dbxtopWithProxy(t, s, p, th)
	var snap model.Snapshot
	waitFor(t, "UNCLOSED on the proxy's evidence", 20*time.Second, func() bool {
		_ = eng.RunOnce(ctx)
		snap = eng.Snapshot()
		o, ok := find(snap, op.Ref.StatementID)
		return ok && o.HasFlag(model.FlagUnclosed)
	})
	o, _ := find(snap, op.Ref.StatementID)
	if !strings.Contains(o.StatusNote, "open per dbxtop proxy") {
		t.Errorf("status note %q does not say the openness came from the proxy", o.StatusNote)
	}
	if d, ok := find(snap, dop.Ref.StatementID); ok && (d.HasFlag(model.FlagUnclosed) || d.Open != nil) {
		t.Errorf("the direct client's operation: open %v, flags %+v; want openness unknown, no UNCLOSED", d.Open, d.Flags)
	}

	if err := proxied.CloseOperation(ctx, op.Ref); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "UNCLOSED to clear after the client's close", 20*time.Second, func() bool {
		_ = eng.RunOnce(ctx)
		o, ok := find(eng.Snapshot(), op.Ref.StatementID)
		return !ok || !o.HasFlag(model.FlagUnclosed)
	})
}

// TestProxysEvidenceOfOpennessAgesOut: a proxied client leaves its
// finished operation open and goes silent; the server's leak reaper
// closes it, which the proxy cannot see (it still reports it open).
// dbxtop shows it UNCLOSED on the proxy's evidence only until the
// server's reaper could have acted (--server-leak-timeout after the later
// of its end and its client's last call):
// once the server has closed it, openness is unknown and the note says
// why — never UNCLOSED for as long as the proxy remembers it.
func TestProxysEvidenceOfOpennessAgesOut(t *testing.T) {
	const reaper = 5 * time.Second // --server-leak-timeout, shorter than the simulator's leak reaper
	s := startSimWith(t, sim.Options{Scenario: sim.ScenarioQuiet, Seed: 7,
		LeakTimeout: reaper + 3*time.Second, ReapEvery: 100 * time.Millisecond})
	p := startProxy(t, s.URL(), Options{Heal: true, Policy: fastPolicy()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "leaky-job/1.0")
	op := execute(ctx, t, c, s.WarehouseIDs()[0], "SELECT 2")
	waitFor(t, "the statement to finish", 10*time.Second, func() bool {
		st, err := c.GetOperationStatus(ctx, op.Ref)
		return err == nil && st.State.Terminal()
	})
	th := model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: time.Minute, LeakAfter: time.Second, ServerLeakTimeout: reaper}
	eng := dbxtopWithProxy(t, s, p, th)
	waitFor(t, "UNCLOSED on the proxy's evidence", 20*time.Second, func() bool {
		_ = eng.RunOnce(ctx)
		o, ok := find(eng.Snapshot(), op.Ref.StatementID)
		return ok && o.HasFlag(model.FlagUnclosed) && strings.Contains(o.StatusNote, "open per dbxtop proxy:")
	})
	waitFor(t, "the server's leak reaper to close it", 20*time.Second, func() bool {
		for _, o := range s.Truth().Operations {
			if o.StatementID == op.Ref.StatementID {
				return !o.Open
			}
		}
		return false
	})
	admin, err := adminapi.NewAdminClient(p.AdminURL(), p.AdminToken(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.CloseIdleConnections()
	facts, err := admin.Operations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.StatementID == op.Ref.StatementID && f.Close.Outcome != sources.ProxyOpen {
			t.Fatalf("the proxy's account %+v: the test needs a proxy that still reports it open", f)
		}
	}
	if err := eng.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	o, ok := find(eng.Snapshot(), op.Ref.StatementID)
	switch {
	case !ok:
		t.Fatal("the reaped operation left the snapshot")
	case o.HasFlag(model.FlagUnclosed) || o.Open != nil:
		t.Errorf("after the server reaped it: open %v, flags %+v, note %q; want openness unknown, no UNCLOSED", o.Open, o.Flags, o.StatusNote)
	case !strings.Contains(o.StatusNote, "may have closed it since"):
		t.Errorf("status note %q does not say why openness is unknown", o.StatusNote)
	}
}
