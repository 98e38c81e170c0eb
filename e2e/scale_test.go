package e2e

import (
	"testing"
	"time"
)

// TestScaleShape is issue 16's CI check (docs/performance.md "Scale"):
// the simulator in-process with 50 ms ± 20 % latency on every answer,
// 250 and then 1,000 live operations followed by the engine as cmd wires
// it. It asserts the scaling shape from counts, never from wall-clock
// speed: calls per operation-minute (everything dbxtop sent: discovery,
// batches, per-operation polls, read from the simulator's
// observer_requests) stay within the goal and do not grow with the
// number of operations, per-operation polls stay a small share, and every
// live operation's state is confirmed within the window. A slow machine
// makes fewer calls, never more, so none of these bounds can fail for
// slowness alone. The refresh cost's shape is asserted in tui
// (TestRefreshCostShape).
func TestScaleShape(t *testing.T) {
	budget(t)
	const latency = 50 * time.Millisecond
	var res []scaleResult
	for _, n := range []int{250, 1000} {
		w := startScaleWorld(t, n, latency, 0)
		r := w.engineContender(t, true, 3*time.Second, 8*time.Second)
		t.Logf("%d ops: %.3f calls per op-minute %v; staleness p50 %v p95 %v max %v; %s",
			n, r.perOpMin, r.byCall, r.p50, r.p95, r.max, r.health.Freshness)
		res = append(res, r)
		if r.perOpMin > 2 {
			t.Errorf("%d ops: %.2f calls per operation-minute, goal ≤ 2 (%v)", n, r.perOpMin, r.byCall)
		}
		if polls := r.byCall["GetOperationStatus"] + r.byCall["GetStatement"]; float64(polls) > 0.1*float64(r.calls)+10 {
			t.Errorf("%d ops: %d of %d calls were per-operation polls: live operations should be confirmed in batches", n, polls, r.calls)
		}
		if !r.confirmedAll {
			t.Errorf("%d ops: not every live operation was confirmed within the window", n)
		}
	}
	small, large := res[0], res[1]
	if large.perOpMin > small.perOpMin*1.25+0.05 {
		t.Errorf("calls per operation-minute grow with operations: %.3f at %d, %.3f at %d",
			small.perOpMin, small.ops, large.perOpMin, large.ops)
	}
}
