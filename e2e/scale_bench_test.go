package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkScaleCallsAndStaleness measures issue 16's goals side by side
// in one run (docs/performance.md "Scale"): for 1,000 and 10,000 live
// operations at 50 ms ± 20 % latency, each contender of the scale rig in
// turn against the same simulated workspace — dbxtop now, dbxtop before
// batches, and per-operation pollers at 200 ms and 1 s (on a sample of
// 200 operations: their cost per operation does not depend on how many
// there are, and 10,000 goroutines polling every 200 ms would measure
// this machine, not the method) — and, at 1,000, dbxtop again against a
// query history lagging 2 s. Figures: server calls per operation-minute
// (from the simulator's observer_requests for the engines) and the
// staleness of live operations' state, sampled every 250 ms. It writes
// the table to $DBXTOP_PERF_DIR/scale.md. DBXTOP_SCALE_OPS overrides the
// sizes (comma list).
func BenchmarkScaleCallsAndStaleness(b *testing.B) {
	sizes := []int{1000, 10000}
	if v := os.Getenv("DBXTOP_SCALE_OPS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("DBXTOP_SCALE_OPS: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	const latency = 50 * time.Millisecond
	warm, window := 5*time.Second, 20*time.Second
	var rows []string
	for b.Loop() {
		rows = rows[:0]
		for _, n := range sizes {
			w := startScaleWorld(b, n, latency, 0)
			var res []scaleResult
			res = append(res, w.engineContender(b, true, warm, window))
			res = append(res, w.engineContender(b, false, warm, window))
			res = append(res, w.fixedContender(b, 200*time.Millisecond, 200, window))
			res = append(res, w.fixedContender(b, time.Second, 200, window))
			if n <= 1000 {
				lw := startScaleWorld(b, n, latency, 2*time.Second)
				r := lw.engineContender(b, true, warm, window)
				r.contender = "dbxtop, history lag 2 s"
				res = append(res, r)
			}
			base := res[0]
			for _, r := range res {
				rows = append(rows, fmt.Sprintf("| %d | %s | %d | %.3f | %.1f× | %s | %s | %s | %s |",
					n, r.contender, r.calls, r.perOpMin, r.perOpMin/base.perOpMin,
					sec(r.p50), sec(r.p95), sec(r.max), calls(r.byCall)))
				b.Logf("%d ops %s: %.3f calls/op-min (%v), staleness p50 %v p95 %v max %v; %s",
					n, r.contender, r.perOpMin, r.byCall, r.p50, r.p95, r.max, r.health.Freshness)
			}
			b.ReportMetric(res[0].perOpMin, fmt.Sprintf("calls/op-min@%d", n))
			b.ReportMetric(res[0].p95.Seconds(), fmt.Sprintf("p95-stale-s@%d", n))
		}
	}
	if dir := os.Getenv("DBXTOP_PERF_DIR"); dir != "" {
		t := "| live ops | contender | calls in window | calls per op-minute | × dbxtop | staleness p50 | p95 | max | engine's calls by name |\n" +
			"|---|---|---|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "scale.md"), []byte(t), 0o644); err != nil {
			b.Error(err)
		}
	}
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func calls(m map[string]int64) string {
	if len(m) == 0 {
		return "—"
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var out []string
	for _, k := range ks {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}
