package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestServerRestartedBehindAProxyPagesNothing: a client behind `dbxtop
// proxy` runs two statements on a strict server, then goes silent; `dbxtop
// serve --proxy` (the built binary) flags them INACTIVE with a countdown
// to the reaper, as it should. The server restarts on the same address
// and no longer has them; the proxy still lists them running, and no
// server source can prove them gone. Once their client made no call for
// --server-idle-timeout they are possibly reaped: serve's /metrics carries
// no INACTIVE or STALE for them and no reaper countdown — the series that
// DbxtopOrphanAboutToBeReaped, DbxtopOrphanReapImminent and
// DbxtopStaleOperations read (docs/alerts/dbxtop.rules.yml) — while it
// still counts them followed. The alerts' own resolution (keep_firing_for
// 10m) is Prometheus's; the series are what this test asserts.
func TestServerRestartedBehindAProxyPagesNothing(t *testing.T) {
	t.Parallel()
	budget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const token = "0123456789abcdef0123456789abcdef"
	o := sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1, Token: token, IdleTimeout: 10 * time.Minute}
	s1 := startSimServer(t, o)
	px := startProxy(ctx, t, proxy.Options{Upstream: s1.URL()})
	owner, err := thrift.NewClient(thrift.Options{Host: px.URL(), Token: token, UserAgent: "Databricks JDBC 2.6.36"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.CloseIdleConnections)
	sess, err := owner.OpenSession(ctx, s1.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := owner.Execute(ctx, sess, "SELECT sleep(600)", false); err != nil {
			t.Fatal(err)
		}
	}
	lastCall := time.Now() // the client is silent from here on

	const idle = 25 * time.Second // --server-idle-timeout: room for a loaded machine before it
	serve := start(t, t.TempDir(), []string{"DATABRICKS_TOKEN=" + token, "DBXTOP_PROXY_TOKEN=" + px.AdminToken()},
		"serve", "--host", s1.URL(), "--proxy", px.AdminURL(), "--listen", "127.0.0.1:0", "--refresh", "500ms",
		"--inactivity-warn", "2s", "--server-idle-timeout", idle.String())
	var listen, stoken string
	if first := serve.waitFirstLine(30 * time.Second); func() bool {
		n, _ := fmt.Sscanf(first, "listen=%s token=%s", &listen, &stoken)
		return n != 2
	}() {
		t.Fatalf("serve's first line %q", first)
	}
	m := func() map[string]float64 { return scrapeMetrics(t, listen, stoken) }

	// Before the restart the orphans are real: INACTIVE, counting down.
	var before map[string]float64
	awaitCond(t, ctx, "INACTIVE and a reaper countdown before the restart", serve.stderr, func() bool {
		before = m()
		return sumOf(before, `dbxtop_operations_flagged{`, `flag="INACTIVE"`) >= 2 && has(before, "dbxtop_reaper_countdown_min_seconds{")
	})
	if time.Since(lastCall) >= idle {
		t.Fatalf("INACTIVE came %s after the client's last call, past --server-idle-timeout %s: the timeline tests nothing",
			time.Since(lastCall).Round(time.Second), idle)
	}

	closeSim(t, s1)
	o.Listen = strings.TrimPrefix(s1.URL(), "http://")
	startSimServer(t, o) // the same address and token, none of the statements

	// Past the reaper's deadline (and a few refreshes), nothing the
	// server no longer has is flagged INACTIVE or STALE, and no countdown
	// is left; the statements are still followed.
	for time.Since(lastCall) < idle+3*time.Second {
		select {
		case <-ctx.Done():
			t.Fatal("timed out")
		case <-time.After(200 * time.Millisecond):
		}
	}
	var after map[string]float64
	awaitCond(t, ctx, "no INACTIVE, STALE or countdown after the restart", serve.stderr, func() bool {
		after = m()
		return sumOf(after, `dbxtop_operations_flagged{`, `flag="INACTIVE"`) == 0 &&
			sumOf(after, `dbxtop_operations_flagged{`, `flag="STALE"`) == 0 &&
			!has(after, "dbxtop_reaper_countdown_min_seconds{")
	})
	settled := time.Now()
	for time.Since(settled) < 3*time.Second { // and it stays so, refresh after refresh
		time.Sleep(500 * time.Millisecond)
		after = m()
		if n := sumOf(after, `dbxtop_operations_flagged{`, `flag="INACTIVE"`) + sumOf(after, `dbxtop_operations_flagged{`, `flag="STALE"`); n > 0 || has(after, "dbxtop_reaper_countdown_min_seconds{") {
			t.Fatalf("%.0f INACTIVE or STALE flags, or a reaper countdown, came back after the restart:\n%s", n, metricLines(after, "dbxtop_operations_flagged{", "dbxtop_reaper"))
		}
	}
	if f := sumOf(after, "dbxtop_followed_operations{", ""); f < 2 {
		t.Fatalf("%.0f operations followed after the restart, want the 2 the proxy still lists (nothing was tested)", f)
	}
	if code, _ := serve.signalAndWait(syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("serve exit %d after SIGTERM\n%s", code, serve.stderr)
	}
}

// startProxy starts dbxtop proxy in process on loopback, closed when
// the test ends.
func startProxy(ctx context.Context, t *testing.T, o proxy.Options) *proxy.Server {
	t.Helper()
	px, err := proxy.Start(ctx, o, proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = px.Close(cctx)
	})
	return px
}

// scrapeMetrics reads serve's /metrics: series (name and labels) → value.
func scrapeMetrics(t *testing.T, url, token string) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// sumOf sums the series whose name starts with prefix and that contain
// label.
func sumOf(m map[string]float64, prefix, label string) float64 {
	var s float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) && strings.Contains(k, label) {
			s += v
		}
	}
	return s
}

func has(m map[string]float64, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func metricLines(m map[string]float64, prefixes ...string) string {
	var b strings.Builder
	for k, v := range m {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				fmt.Fprintf(&b, "%s %g\n", k, v)
			}
		}
	}
	return b.String()
}
