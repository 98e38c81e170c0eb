package conformance

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dbsql "github.com/databricks/databricks-sql-go"
	"github.com/databricks/databricks-sql-go/driverctx"

	"github.com/dbxtop/dbxtop/cmd"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// Issue 15's proofs: databricks-sql-go v1.14.0, unchanged, through
// `dbxtop proxy` to the simulator (docs/proxy.md).

// proxyLog collects the proxy's log lines, to check no token is in them.
type proxyLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *proxyLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(b)
}

// logger is the proxy's logger writing into l.
func (l *proxyLog) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func (l *proxyLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProxy runs the proxy in front of s on free loopback ports.
func startProxy(t testing.TB, s *sim.Server, log *proxyLog) *proxy.Server {
	t.Helper()
	o := proxy.Options{Upstream: s.URL(), Heal: true, UserAgent: "dbxtop-proxy/conformance"}
	if log != nil {
		o.Logger = log.logger()
	}
	p, err := proxy.Start(context.Background(), o, proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("proxy.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("proxy close: %v", err)
		}
	})
	return p
}

func urlHostPort(t testing.TB, raw string) (string, int) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), port
}

// openViaProxy opens the driver exactly as openConnector does, but with
// the proxy's address: the only change a user makes to go through it.
func openViaProxy(t testing.TB, s *sim.Server, p *proxy.Server, extra ...dbsql.ConnOption) *sql.DB {
	t.Helper()
	host, port := urlHostPort(t, p.URL())
	return openViaAddr(t, s, net.JoinHostPort(host, strconv.Itoa(port)), extra...)
}

func proxyOps(t testing.TB, p *proxy.Server) []sources.ProxyOperation {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.AdminURL()+adminapi.PathOperations, nil)
	req.Header.Set("Authorization", "Bearer "+p.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("proxy admin: %v", err)
	}
	defer resp.Body.Close()
	var doc adminapi.OperationsDoc
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("proxy admin JSON: %v", err)
	}
	return doc.Operations
}

// Proof 1: SELECT 1, SELECT 7 and a 2,500-row result paged by 1,000 give
// the same rows through the proxy as direct, with the same upstream RPCs.
func TestProxyTransparent(t *testing.T) {
	t.Parallel()
	s := startSim(t, "")
	p := startProxy(t, s, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		one, seven int64
		n          int
		sum        int64
		calls      map[string]int64
	}
	run := func(db *sql.DB) result {
		var r result
		base := getStats(t, s)
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&r.one); err != nil {
			t.Fatalf("SELECT 1: %v", err)
		}
		if err := db.QueryRowContext(ctx, "SELECT 7").Scan(&r.seven); err != nil {
			t.Fatalf("SELECT 7: %v", err)
		}
		var err error
		if r.n, r.sum, err = querySum(ctx, db, "SELECT id FROM range(2500)"); err != nil {
			t.Fatalf("range(2500): %v", err)
		}
		db.Close() // CloseSession included
		r.calls = getStats(t, s).minus(base).Requests
		delete(r.calls, "SimStats")
		return r
	}
	g := newGuardTransport(simHostPort(t, s), false)
	direct := run(openConnector(t, s, firstWarehouse(t, s), g, dbsql.WithMaxRows(1000)))
	via := run(openViaProxy(t, s, p, dbsql.WithMaxRows(1000)))
	t.Logf("PROXY transparent: direct %+v; through the proxy %+v", direct, via)
	if direct.one != 1 || direct.seven != 7 || direct.n != 2500 || direct.sum != 2499*2500/2 {
		t.Fatalf("direct results wrong: %+v", direct)
	}
	if via.one != direct.one || via.seven != direct.seven || via.n != direct.n || via.sum != direct.sum {
		t.Errorf("rows differ: direct %+v, proxy %+v", direct, via)
	}
	if fmt.Sprint(via.calls) != fmt.Sprint(direct.calls) {
		t.Errorf("upstream RPCs differ: direct %v, proxy %v", direct.calls, via.calls)
	}
	if direct.calls["FetchResults"] < 2 {
		t.Errorf("the 2,500-row result was not paged: %v", direct.calls)
	}
	if st := p.Stats(); st.Healed != 0 || st.Undecodable != 0 || st.NotThrift != 0 {
		t.Errorf("proxy stats without faults: %+v", st)
	}
}

// Proof 2: with half the status polls reset and the driver's own retries
// off, N statements direct mostly fail and are orphaned; through the
// healing proxy all succeed, and the truth shows none orphaned or leaked.
func TestProxyHealsStatusResets(t *testing.T) {
	t.Parallel()
	n, secs := 50, 3
	sc := orphanScenario{name: "reset-50pct-status", faults: "reset=0.5@GetOperationStatus"}
	naive := contender{name: "naive-one-poll", open: func(t testing.TB, s *sim.Server, n int) *sql.DB {
		g := newGuardTransport(simHostPort(t, s), false)
		return openConnector(t, s, firstWarehouse(t, s), g, dbsql.WithRetries(-1, 0, 0))
	}}
	var proxied *proxy.Server
	viaProxy := contender{name: "naive-one-poll-via-proxy", open: func(t testing.TB, s *sim.Server, n int) *sql.DB {
		proxied = startProxy(t, s, nil)
		return openViaProxy(t, s, proxied, dbsql.WithRetries(-1, 0, 0))
	}}
	var direct, healed orphanResult
	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		direct = runOrphans(t, sc, naive, n, secs)
		t.Log(direct)
	})
	t.Run("proxy", func(t *testing.T) {
		t.Parallel()
		healed = runOrphans(t, sc, viaProxy, n, secs)
		t.Log(healed)
		if healed.ok != n || healed.abandoned != 0 || healed.leaked != 0 {
			t.Errorf("through the proxy: %d/%d succeeded, %d orphaned, %d leaked; want all, 0, 0 (first error: %s)",
				healed.ok, n, healed.abandoned, healed.leaked, healed.firstErr)
		}
		if st := proxied.Stats(); st.Healed == 0 || st.FreshConnections == 0 {
			t.Errorf("the proxy healed nothing: %+v", st)
		}
	})
	t.Cleanup(func() {
		// Orphaned: given up by its client and left to the server's
		// reapers, still running (abandoned) or finished and never closed
		// (leaked).
		t.Logf("PROXY healing N=%d reset=0.5@GetOperationStatus, driver retries off: direct ok=%d failed=%d orphaned=%d (abandoned %d, leaked %d, overlapping); proxy ok=%d failed=%d orphaned=%d",
			n, direct.ok, direct.failed, direct.orphaned, direct.abandoned, direct.leaked,
			healed.ok, healed.failed, healed.orphaned)
		if direct.orphaned > n {
			t.Errorf("direct: %d orphaned of %d statements: the count is not of distinct statements", direct.orphaned, n)
		}
		if direct.failed <= n/2 || direct.orphaned <= n/2 {
			t.Errorf("direct: %d of %d failed, %d orphaned: the fault does not reproduce the orphan bug", direct.failed, n, direct.orphaned)
		}
	})
}

// snapshotJSON runs `dbxtop snapshot --json` in-process with the proxy's
// facts and returns the document and the exit status.
func snapshotJSON(t *testing.T, s *sim.Server, p *proxy.Server, extra ...string) (map[string]any, int) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"snapshot", "--host", s.URL(), "--proxy", p.AdminURL(), "--json"}, extra...)
	code := cmd.Execute(args, &out, &errb)
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("snapshot %v: exit %d, not JSON: %v (stderr %q)", args, code, err, errb.String())
	}
	noSecret(t, s, "snapshot output", out.String()+errb.String())
	return doc, code
}

func snapshotOp(doc map[string]any, id string) map[string]any {
	ops, _ := doc["operations"].([]any)
	for _, o := range ops {
		if m, ok := o.(map[string]any); ok && m["statement_id"] == id {
			return m
		}
	}
	return nil
}

func opFlag(op map[string]any, kind string) (map[string]any, bool) {
	fl, _ := op["flags"].([]any)
	for _, f := range fl {
		if m, ok := f.(map[string]any); ok && m["kind"] == kind {
			return m, true
		}
	}
	return nil, false
}

// Proof 3: every upstream CloseOperation fails until the proxy's own queue
// has tried the close and failed too. The client's close gets the real
// error, `snapshot --proxy` shows CLOSE_FAILED naming the client, and once
// the fault ends the proxy's queue closes the operation.
func TestProxyClientCloseFailureNotLeaked(t *testing.T) {
	s := startSim(t, "")
	log := &proxyLog{}
	p := startProxy(t, s, log)
	t.Setenv("DATABRICKS_TOKEN", s.Token())
	t.Setenv("DBXTOP_PROXY_TOKEN", p.AdminToken())
	db := openViaProxy(t, s, p, dbsql.WithMaxRows(1000))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var id string
	qctx := driverctx.NewContextWithQueryIdCallback(ctx, func(q string) { id = q })
	rows, err := db.QueryContext(qctx, "SELECT id FROM range(2500)")
	if err != nil {
		t.Fatal(err)
	}
	// The driver closes the operation when it reads the last page: the
	// outage starts before.
	setFaults(t, s, "unavailable=1@CloseOperation")
	n := 0
	for rows.Next() {
		n++
	}
	if n != 2500 || id == "" {
		t.Fatalf("%d rows, statement %q", n, id)
	}
	closeErr := rows.Close()
	t.Logf("the driver's rows.Close: %v", closeErr)
	var f sources.ProxyOperation
	for _, o := range proxyOps(t, p) {
		if o.StatementID == id {
			f = o
		}
	}
	if f.Close.Outcome != sources.ProxyCloseFailed || f.Close.ClientError == nil || f.Close.ClientError.HTTPStatus != 503 {
		t.Fatalf("the client's close: %+v; want close_failed with the upstream's 503 answered to the client", f.Close)
	}
	doc, code := snapshotJSON(t, s, p)
	op := snapshotOp(doc, id)
	cf, ok := opFlag(op, "CLOSE_FAILED")
	if op == nil || !ok || !strings.Contains(fmt.Sprint(cf["detail"]), "client's close failed") || code != 2 {
		t.Fatalf("snapshot --proxy: exit %d, operation %v", code, op)
	}
	// The outage lasts until the proxy's queue has made a close attempt
	// of its own (refused like the client's), so the queue is proven to
	// retry rather than to have been lucky.
	clientCloses := getStats(t, s).Requests["CloseOperation"]
	waitForStats(t, s, 90*time.Second, "the proxy's queue to try the close during the outage", func(st stats) bool {
		return st.Requests["CloseOperation"] > clientCloses
	})
	if o, ok := getTruth(t, s).op(id); !ok || !o.Open {
		t.Fatalf("closed during the outage: %+v", o)
	}
	setFaults(t, s, "")
	tr := waitFor(t, s, 90*time.Second, "the proxy's queue to close the operation", func(tr truth) bool {
		o, ok := tr.op(id)
		return ok && !o.Open
	})
	o, _ := tr.op(id)
	for _, pf := range proxyOps(t, p) {
		if pf.StatementID == id && pf.Close.Outcome != sources.ProxyClosedByProxy {
			t.Errorf("proxy account after the fault: %+v", pf.Close)
		}
	}
	t.Logf("PROXY leak prevention: client close error %v; truth %s open=%v after the outage; proxy closes %+v",
		f.Close.ClientError, o.State, o.Open, p.Stats().ClosedByProxy)
	noSecret(t, s, "proxy log", log.String())
}

// helperDSN, when set, makes TestProxyHelperDriver act as a separate driver
// process for proof 4: it starts a long statement through the proxy,
// prints its id and waits to be killed.
const helperDSN = "DBXTOP_CONFORMANCE_HELPER_DSN"

func TestProxyHelperDriver(t *testing.T) {
	dsn := os.Getenv(helperDSN)
	if dsn == "" {
		t.Skip("helper process for TestProxyKilledDriverInactive")
	}
	db, err := sql.Open("databricks", dsn)
	if err != nil {
		fmt.Println("error=" + err.Error())
		os.Exit(1)
	}
	ctx := driverctx.NewContextWithQueryIdCallback(context.Background(), func(q string) {
		if q != "" {
			fmt.Println("id=" + q)
		}
	})
	var v any
	err = db.QueryRowContext(ctx, "SELECT sleep(600)").Scan(&v)
	fmt.Println("error=", err)
	os.Exit(1)
}

// Proof 4: a driver process killed while its statement runs shows as
// INACTIVE in `snapshot --proxy` within --inactivity-warn + 2 refreshes,
// with a countdown consistent with the simulator's idle timeout (±2 s),
// before the reaper fails it.
func TestProxyKilledDriverInactive(t *testing.T) {
	const idle = 60 * time.Second
	s := startSimOpts(t, sim.Options{IdleTimeout: idle})
	p := startProxy(t, s, nil)
	t.Setenv("DATABRICKS_TOKEN", s.Token())
	t.Setenv("DBXTOP_PROXY_TOKEN", p.AdminToken())
	host, port := urlHostPort(t, p.URL())
	dsn := fmt.Sprintf("http://token:%s@%s/sql/1.0/warehouses/%s?enableTelemetry=false",
		s.Token(), net.JoinHostPort(host, strconv.Itoa(port)), firstWarehouse(t, s))
	id, killed := killedDriver(t, s, dsn)
	const warn, refresh = 5 * time.Second, 2 * time.Second
	var op map[string]any
	for {
		doc, _ := snapshotJSON(t, s, p, "--inactivity-warn", warn.String(), "--server-idle-timeout", idle.String(), "--refresh", refresh.String())
		op = snapshotOp(doc, id)
		if _, ok := opFlag(op, "INACTIVE"); ok {
			break
		}
		if time.Since(killed) > warn+2*refresh {
			t.Fatalf("no INACTIVE within --inactivity-warn + 2 refreshes (%s) of the kill: %v", warn+2*refresh, op)
		}
		time.Sleep(250 * time.Millisecond)
	}
	seen := time.Now()
	tr := getTruth(t, s)
	o, _ := tr.op(id)
	if o.State != "RUNNING" || o.OwnerLastActivity == nil {
		t.Fatalf("the reaper must not have failed it yet: %+v", o)
	}
	reapedIn, _ := op["reaped_in_s"].(float64)
	want := (idle - seen.Sub(*o.OwnerLastActivity)).Seconds()
	t.Logf("PROXY orphan detection: INACTIVE %.1fs after the kill; reaped_in_s=%.1f, simulator's reaper due in %.1fs",
		seen.Sub(killed).Seconds(), reapedIn, want)
	if reapedIn < want-2 || reapedIn > want+2 {
		t.Errorf("countdown %.1fs, the simulator reaps in %.1fs (want ±2 s)", reapedIn, want)
	}
}

// Proof 6: garbage, truncated bodies, a client leaving mid-stream, an
// upstream that hangs or answers HTML: the proxy answers with a clear
// error, keeps serving the driver, logs no token (goroutine leaks are
// checked by TestMain's goleak).
func TestProxyBadInputKeepsServingTheDriver(t *testing.T) {
	t.Parallel()
	s := startSim(t, "")
	log := &proxyLog{}
	p := startProxy(t, s, log)
	db := openViaProxy(t, s, p)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := p.URL() + "/sql/1.0/warehouses/" + firstWarehouse(t, s)
	post := func(body io.Reader) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, path, body)
		req.Header.Set("Authorization", "Bearer "+s.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(strings.NewReader("GET / HTTP/1.0 garbage")); code != http.StatusBadRequest {
		t.Errorf("garbage: HTTP %d, want the server's 400 passed through", code)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /sql/1.0/warehouses/x HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n\r\n\x80\x01\x00\x01\x00")
	conn.Close()
	// Mid-stream: the driver reads a few rows of a large result and leaves.
	rows, err := db.QueryContext(ctx, "SELECT id FROM range(3000000)")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && rows.Next(); i++ {
	}
	rows.Close()
	var seven int64
	if err := db.QueryRowContext(ctx, "SELECT 7").Scan(&seven); err != nil || seven != 7 {
		t.Fatalf("after bad input the driver gets %d, %v", seven, err)
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	for _, up := range []http.HandlerFunc{
		func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>Sign in</html>")
		},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: up}
		go func() { _ = srv.Serve(ln) }()
		bad, err := proxy.Start(ctx, proxy.Options{Upstream: "http://" + ln.Addr().String(), Heal: true},
			proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		bh, bp := urlHostPort(t, bad.URL())
		g := newGuardTransport(net.JoinHostPort(bh, strconv.Itoa(bp)), false)
		c, err := dbsql.NewConnector(dbsql.WithServerHostname("http://"+bh), dbsql.WithPort(bp),
			dbsql.WithHTTPPath("/sql/1.0/warehouses/x"), dbsql.WithAccessToken(s.Token()), dbsql.WithTransport(g),
			dbsql.WithRetries(-1, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		bdb := sql.OpenDB(c)
		qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
		err = bdb.QueryRowContext(qctx, "SELECT 1").Scan(new(any))
		qcancel()
		if err == nil {
			t.Error("a hanging or HTML upstream answered SELECT 1")
		}
		t.Logf("driver through a bad upstream: %v", err)
		bdb.Close()
		g.closeAll()
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		releaseOnce.Do(func() { close(release) })
		_ = bad.Close(cctx)
		_ = srv.Shutdown(cctx)
		ccancel()
		srv.Close()
	}
	if err := db.QueryRowContext(ctx, "SELECT 7").Scan(&seven); err != nil {
		t.Fatalf("the good proxy after the bad upstreams: %v", err)
	}
	if st := p.Stats(); st.NotThrift == 0 {
		t.Errorf("garbage not counted: %+v", st)
	}
	noSecret(t, s, "proxy log", log.String())
}

// killedDriver runs TestProxyHelperDriver's databricks-sql-go in a
// process of its own against dsn, waits for its statement to be RUNNING
// in the simulator's truth, and kills the process: the statement's client
// is gone without a word, as a crashed job's is. It returns the
// statement's id and when the process died.
func killedDriver(t *testing.T, s *sim.Server, dsn string) (string, time.Time) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^TestProxyHelperDriver$", "-test.count=1")
	child.Env = append(os.Environ(), helperDSN+"="+dsn)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	var id string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "id="); ok {
			id = v
			break
		}
	}
	if id == "" {
		t.Fatal("the driver process printed no statement id")
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	waitFor(t, s, 30*time.Second, "the statement RUNNING and polled", func(tr truth) bool {
		o, ok := tr.op(id)
		return ok && o.State == "RUNNING"
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	return id, time.Now()
}
