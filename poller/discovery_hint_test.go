package poller

import (
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// When discovery (query history) already reports an operation ended, the
// engine confirms with a status poll at once instead of waiting for the
// operation's next scheduled poll: with discovery every second, no change
// takes longer than about a second to be seen, although a long-running
// operation is polled only every ~3 s.
func TestEngineDiscoveryHintBringsPollForward(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	o := sourceOptions(src)
	o.Refresh = time.Second
	h := startEngine(t, o)
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = opID(500 + i)
		s.add(srvOp{ID: ids[i], State: "RUNNING", Open: true, StartedAt: h.clk.Now().Add(-time.Hour)})
	}
	h.run(20*time.Second, 50*time.Millisecond)
	h.drain()
	begin := h.clk.Now()
	changed := map[string]time.Time{}
	var worst time.Duration
	seen := 0
	for seen < len(ids) && h.clk.Now().Sub(begin) < 15*time.Second {
		for i, id := range ids {
			if _, ok := changed[id]; !ok && !h.clk.Now().Before(begin.Add(time.Duration(i)*155*time.Millisecond)) {
				s.set(id, func(o *srvOp) { o.State = "FINISHED" })
				changed[id] = h.clk.Now()
			}
		}
		h.run(20*time.Millisecond, 20*time.Millisecond)
		for _, ev := range h.drain() {
			if at, ok := changed[ev.StatementID]; ok && ev.Kind == model.EventStateChange {
				seen++
				worst = max(worst, ev.At.Sub(at))
			}
		}
	}
	if seen != len(ids) {
		t.Fatalf("%d of %d changes seen", seen, len(ids))
	}
	// One discovery period plus one 20 ms step of the fake clock.
	if worst > time.Second+40*time.Millisecond {
		t.Fatalf("slowest detection %s with discovery every 1s; want ≤ 1.04s", worst)
	}
	t.Logf("slowest detection %s", worst)
}
