package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dbsql "github.com/databricks/databricks-sql-go"
	"github.com/databricks/databricks-sql-go/driverctx"

	"github.com/dbxtop/dbxtop/cmd"
	"github.com/dbxtop/dbxtop/internal/dnstest"
	"github.com/dbxtop/dbxtop/internal/targets"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// Issue 44: many proxies, one view. Three proxies on 127.0.0.2, .3 and .4
// behind nginx (round-robin, keepalive) in front of one simulator; the
// three drivers run through nginx, so each proxy sees a part of every
// operation's calls; dbxtop reads the proxies found by a file_sd file and
// by a DNS name a DNS server on loopback serves.

const (
	fleetToken   = "fleet-admin-token-0123456789abcdef"
	fleetWarn    = 8 * time.Second  // --inactivity-warn
	fleetRefresh = time.Second      // serve's --refresh
	fleetAbandon = 30 * time.Second // the proxies' --close-abandoned
)

// fleetProxy is one of the three: a proxy on ip, its admin API on the
// port the three share (the DNS name gives addresses, not ports).
type fleetProxy struct {
	ip, listen, admin string
	peers             []string // the others' admin addresses
	mu                sync.Mutex
	srv               *proxy.Server
}

func (fp *fleetProxy) start(t testing.TB, s *sim.Server) {
	t.Helper()
	// Replicas: each asks the other two (--peers) before it treats an
	// operation as abandoned (--close-abandoned).
	var peers []string
	for _, a := range fp.peers {
		peers = append(peers, "http://"+a)
	}
	src, err := targets.ParseAll(peers, targets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.Start(context.Background(), proxy.Options{Upstream: s.URL(), Heal: true, UserAgent: "dbxtop-proxy/fleet",
		CloseAbandoned: fleetAbandon, Peers: src, PeerToken: fleetToken},
		proxy.ServeOptions{Listen: fp.listen, AdminListen: fp.admin, AdminToken: fleetToken})
	if err != nil {
		t.Fatalf("proxy on %s: %v", fp.ip, err)
	}
	fp.mu.Lock()
	fp.srv = p
	fp.mu.Unlock()
}

// stop stops it at once: requests in flight are cut (a kill, as far as
// its clients and dbxtop can tell).
func (fp *fleetProxy) stop() {
	fp.mu.Lock()
	p := fp.srv
	fp.srv = nil
	fp.mu.Unlock()
	if p != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = p.Close(ctx)
	}
}

// sharedPorts finds two ports free on every ip (Thrift and admin).
func sharedPorts(t testing.TB, ips []string) (thrift, admin string) {
	t.Helper()
	free := func(exclude string) string {
		for range 50 {
			p := freePort(t)
			if p == exclude {
				continue
			}
			ok := true
			for _, ip := range ips {
				l, err := net.Listen("tcp", net.JoinHostPort(ip, p))
				if err != nil {
					ok = false
					break
				}
				l.Close()
			}
			if ok {
				return p
			}
		}
		t.Fatalf("no port free on all of %v", ips)
		return ""
	}
	thrift = free("")
	return thrift, free(thrift)
}

// fleetOp is one operation of a dbxtop snapshot, as the test reads it.
type fleetOp struct {
	ID      string   `json:"statement_id"`
	State   string   `json:"state"`
	Flags   []string // kinds
	SeenBy  []string
	Unknown string
}

type fleetDoc struct {
	Ops     map[string]*fleetOp
	Dups    []string
	Proxies []struct {
		Name    string `json:"name"`
		Up      bool   `json:"up"`
		Reason  string `json:"reason"`
		Version string `json:"version"`
	}
}

func parseFleetDoc(t testing.TB, b []byte) fleetDoc {
	t.Helper()
	var raw struct {
		Operations []struct {
			ID    string `json:"statement_id"`
			State string `json:"state"`
			Flags []struct {
				Kind string `json:"kind"`
			} `json:"flags"`
			Proxy *struct {
				SeenBy  []string `json:"seen_by"`
				Unknown string   `json:"unknown"`
			} `json:"proxy"`
		} `json:"operations"`
		Proxies json.RawMessage `json:"proxies"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("snapshot JSON: %v (%.300q)", err, b)
	}
	d := fleetDoc{Ops: map[string]*fleetOp{}}
	if len(raw.Proxies) > 0 {
		if err := json.Unmarshal(raw.Proxies, &d.Proxies); err != nil {
			t.Fatalf("proxies: %v", err)
		}
	}
	for _, o := range raw.Operations {
		if _, dup := d.Ops[o.ID]; dup {
			d.Dups = append(d.Dups, o.ID)
		}
		op := &fleetOp{ID: o.ID, State: o.State}
		for _, f := range o.Flags {
			op.Flags = append(op.Flags, f.Kind)
		}
		if o.Proxy != nil {
			op.SeenBy, op.Unknown = o.Proxy.SeenBy, o.Proxy.Unknown
		}
		d.Ops[o.ID] = op
	}
	return d
}

// flagged counts the flags of kind among the operation's.
func (o *fleetOp) flagged(kinds ...string) int {
	n := 0
	for _, f := range o.Flags {
		if slices.Contains(kinds, f) {
			n++
		}
	}
	return n
}

// expected is what the simulator's truth holds: orphans (running, open,
// the owner silent for longer than --inactivity-warn) and leaks (ended,
// still open); healthy are the running ones whose owner still calls.
type expected struct {
	orphans, leaks, healthy map[string]bool
}

func truthSets(tr truth, now time.Time) expected {
	e := expected{orphans: map[string]bool{}, leaks: map[string]bool{}, healthy: map[string]bool{}}
	for _, o := range tr.Operations {
		switch {
		case !o.Open:
		case isTerminal(o.State):
			e.leaks[o.StatementID] = true
		case o.OwnerLastActivity != nil && now.Sub(*o.OwnerLastActivity) > fleetWarn+2*time.Second:
			e.orphans[o.StatementID] = true
		case o.OwnerLastActivity != nil && now.Sub(*o.OwnerLastActivity) < 3*time.Second:
			e.healthy[o.StatementID] = true
		}
	}
	return e
}

// checkOneView: every orphan and leak the truth holds is one row flagged
// once (INACTIVE; CLOSE_FAILED or UNCLOSED), no healthy operation is
// INACTIVE, and no operation is listed twice.
func checkOneView(t testing.TB, what string, d fleetDoc, e expected) {
	t.Helper()
	if len(d.Dups) > 0 {
		t.Errorf("%s: operations listed more than once: %v", what, d.Dups)
	}
	for id := range e.orphans {
		if o := d.Ops[id]; o == nil || o.flagged("INACTIVE") != 1 {
			t.Errorf("%s: orphan %s not flagged INACTIVE once: %+v", what, id, o)
		}
	}
	for id := range e.leaks {
		// A leak whose client's close failed is both UNCLOSED and
		// CLOSE_FAILED (the model's two flags); each once.
		if o := d.Ops[id]; o == nil || o.flagged("CLOSE_FAILED", "UNCLOSED") == 0 || o.flagged("CLOSE_FAILED") > 1 || o.flagged("UNCLOSED") > 1 {
			t.Errorf("%s: leak %s not flagged CLOSE_FAILED or UNCLOSED once: %+v", what, id, o)
		}
	}
	for id := range e.healthy {
		if o := d.Ops[id]; o == nil || o.flagged("INACTIVE") != 0 {
			t.Errorf("%s: healthy operation %s flagged INACTIVE (or missing): %+v", what, id, o)
		}
	}
}

// TestFleetManyProxiesOneView is issue 44's done-when, dbxtop's side.
func TestFleetManyProxiesOneView(t *testing.T) {
	t0 := time.Now()
	modules := nodeModules(t)
	s := startSimOpts(t, sim.Options{Warehouses: 1, IdleTimeout: 5 * time.Minute})
	wh := firstWarehouse(t, s)
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	tport, aport := sharedPorts(t, ips)
	fps := make([]*fleetProxy, len(ips))
	var upstreams []string
	for i, ip := range ips {
		fps[i] = &fleetProxy{ip: ip, listen: net.JoinHostPort(ip, tport), admin: net.JoinHostPort(ip, aport)}
		for j, other := range ips {
			if j != i {
				fps[i].peers = append(fps[i].peers, net.JoinHostPort(other, aport))
			}
		}
		fps[i].start(t, s)
		upstreams = append(upstreams, "http://"+fps[i].listen)
	}
	t.Cleanup(func() {
		for _, fp := range fps {
			fp.stop()
		}
	})
	plain := startNginx(t, upstreams, nginxOptions{})
	cert, key := selfSigned(t)
	tlsAddr := startNginx(t, upstreams, nginxOptions{TLSCert: cert, TLSKey: key})

	// Discovery: a file_sd file naming the three, each with the token
	// file (no DBXTOP_PROXY_TOKEN for that run), and a DNS name.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte(fleetToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var tg []string
	for _, fp := range fps {
		tg = append(tg, fp.admin)
	}
	sd, _ := json.Marshal([]map[string]any{{"targets": tg, "labels": map[string]string{"__dbxtop_token_file__": "admin.token", "team": "etl"}}})
	sdPath := filepath.Join(dir, "proxies.json")
	if err := os.WriteFile(sdPath, sd, 0o644); err != nil {
		t.Fatal(err)
	}
	dns := dnstest.Start(t, map[string][]string{"proxies.fleet.test.": ips})
	dnsSpec := "dns+http://proxies.fleet.test:" + aport
	t.Setenv("DATABRICKS_TOKEN", s.Token())

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The drivers, through nginx. Healthy: two long statements the Go
	// driver polls every second (each proxy sees a third of the polls),
	// and the Node drivers' short statements, all closed.
	db := openViaAddr(t, s, plain)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v any
			_ = db.QueryRowContext(ctx, "SELECT sleep(300)").Scan(&v)
		}()
	}
	host, portS, _ := net.SplitHostPort(plain)
	thost, tportS, _ := net.SplitHostPort(tlsAddr)
	path := "/sql/1.0/warehouses/" + wh
	// The Node drivers run while the orphan is made; both are done before
	// the close outage that makes the leak.
	type nodeRun struct {
		script string
		res    nodeResult
		took   time.Duration
	}
	nodeDone := make(chan nodeRun, 2)
	for _, r := range []struct{ script, host, port, ca string }{
		{"databricks_sql.js", thost, tportS, cert},
		{"hive_driver.js", host, portS, ""},
	} {
		go func() {
			t1 := time.Now()
			res := runNodeResult(modules, r.script, "DBX_HOST="+r.host, "DBX_PORT="+r.port, "DBX_PATH="+path,
				"DBX_TOKEN="+s.Token(), "DBX_CA="+r.ca, "DBX_N=3")
			nodeDone <- nodeRun{r.script, res, time.Since(t1)}
		}()
	}
	// An orphan: a Go driver process killed while its statement runs.
	dsn := fmt.Sprintf("http://token:%s@%s%s?enableTelemetry=false", s.Token(), plain, path)
	orphan, _ := killedDriver(t, s, dsn)

	for range 2 {
		r := <-nodeDone
		t.Logf("FLEET: %s: %s through nginx: %d ok, %d failed in %s", time.Since(t0).Round(time.Second), r.script, r.res.OK, r.res.Failed, r.took.Round(100*time.Millisecond))
		if r.res.OK != 3 {
			t.Fatalf("%s through nginx: %d ok, %d failed: %v", r.script, r.res.OK, r.res.Failed, r.res.Errors)
		}
	}

	// A leak: the client's close fails upstream (and the proxy's retries
	// with it, while the outage lasts).
	leakDB := openViaAddr(t, s, plain, dbsql.WithMaxRows(1000))
	var leak string
	rows, err := leakDB.QueryContext(driverctx.NewContextWithQueryIdCallback(ctx, func(q string) { leak = q }), "SELECT id FROM range(2500)")
	if err != nil {
		t.Fatal(err)
	}
	setFaults(t, s, "unavailable=1@CloseOperation")
	defer setFaults(t, s, "")
	for rows.Next() {
	}
	_ = rows.Close()

	// The truth: wait until the orphan's owner has been silent past
	// --inactivity-warn.
	tr := waitFor(t, s, 60*time.Second, "the orphan silent past --inactivity-warn", func(tr truth) bool {
		o, ok := tr.op(orphan)
		return ok && o.OwnerLastActivity != nil && time.Since(*o.OwnerLastActivity) > fleetWarn+3*time.Second
	})
	want := truthSets(tr, time.Now())
	t.Logf("FLEET: %s: orphan and leak in the truth; %d orphans, %d leaks, %d healthy", time.Since(t0).Round(time.Second), len(want.orphans), len(want.leaks), len(want.healthy))
	if !want.orphans[orphan] || !want.leaks[leak] || len(want.healthy) < 2 {
		t.Fatalf("the simulator's truth: orphans %v (want %s), leaks %v (want %s), healthy %v", want.orphans, orphan, want.leaks, leak, want.healthy)
	}

	flags := []string{"--host", s.URL(), "--json", "--inactivity-warn", fleetWarn.String(), "--leak-after", "1s"}
	snap := func(env string, extra ...string) fleetDoc {
		t.Helper()
		var o, e bytes.Buffer
		t.Setenv("DBXTOP_PROXY_TOKEN", env)
		cmd.Execute(append(append([]string{"snapshot"}, flags...), extra...), &o, &e)
		noSecret(t, s, "snapshot", o.String()+e.String())
		if strings.Contains(o.String()+e.String(), fleetToken) {
			t.Fatal("the proxies' admin token is in snapshot's output")
		}
		return parseFleetDoc(t, o.Bytes())
	}
	for _, run := range []struct {
		name, token string
		args        []string
	}{
		{"file_sd", "", []string{"--proxy", "file://" + sdPath}},
		{"dns", fleetToken, []string{"--proxy", dnsSpec, "--dns-server", dns.Addr()}},
	} {
		d := snap(run.token, run.args...)
		checkOneView(t, "snapshot by "+run.name, d, want)
		if len(d.Proxies) != 3 {
			t.Errorf("snapshot by %s: proxies %+v", run.name, d.Proxies)
		}
		for _, p := range d.Proxies {
			if !p.Up || p.Version == "" {
				t.Errorf("snapshot by %s: proxy %+v", run.name, p)
			}
		}
		// nginx spread each healthy statement's polls over the three.
		for id := range want.healthy {
			if o := d.Ops[id]; o == nil || len(o.SeenBy) != 3 {
				t.Errorf("snapshot by %s: healthy %s seen by %+v, want all three proxies", run.name, id, o)
			}
		}
	}

	// serve, by the DNS name; then a proxy is killed and restarted.
	t.Setenv("DBXTOP_PROXY_TOKEN", fleetToken)
	sctx, scancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	serveDone := make(chan int, 1)
	go func() {
		serveDone <- cmd.ExecuteContext(sctx, []string{"serve", "--listen", "127.0.0.1:0", "--refresh", fleetRefresh.String(),
			"--host", s.URL(), "--inactivity-warn", fleetWarn.String(), "--leak-after", "1s", "--proxy", dnsSpec, "--dns-server", dns.Addr()},
			pw, io.Discard)
		pw.Close()
	}()
	defer func() { scancel(); <-serveDone }()
	first, err := bufio.NewReader(pr).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var surl, stok string
	for _, f := range strings.Fields(first) {
		if v, ok := strings.CutPrefix(f, "listen="); ok {
			surl = v
		} else if v, ok := strings.CutPrefix(f, "token="); ok {
			stok = v
		}
	}
	if err != nil || surl == "" || stok == "" {
		t.Fatalf("serve's first line %q: %v", first, err)
	}
	served := func() fleetDoc {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, surl+"/api/v1/snapshot", nil)
		req.Header.Set("Authorization", "Bearer "+stok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fleetDoc{}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fleetDoc{}
		}
		return parseFleetDoc(t, b)
	}
	await := func(what string, within time.Duration, cond func(fleetDoc) bool) (fleetDoc, time.Duration) {
		t.Helper()
		t0 := time.Now()
		for {
			d := served()
			if d.Ops != nil && cond(d) {
				return d, time.Since(t0)
			}
			if time.Since(t0) > within {
				t.Fatalf("serve: %s not within %s; last %+v", what, within, d)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	before, _ := await("the orphan and the leak flagged, three proxies up", 60*time.Second, func(d fleetDoc) bool {
		up := 0
		for _, p := range d.Proxies {
			if p.Up {
				up++
			}
		}
		return up == 3 && d.Ops[orphan] != nil && d.Ops[orphan].flagged("INACTIVE") == 1 && d.Ops[leak] != nil && d.Ops[leak].flagged("CLOSE_FAILED", "UNCLOSED") > 0
	})
	checkOneView(t, "serve", before, want)
	t.Logf("FLEET: %s: serve shows them", time.Since(t0).Round(time.Second))
	if m := metricLines(t, surl, stok, "dbxtop_proxy_up{"); len(m) != 3 {
		t.Errorf("dbxtop_proxy_up: %v, want one series per proxy", m)
	}

	live := map[string]bool{}
	for _, set := range []map[string]bool{want.orphans, want.leaks, want.healthy} {
		for id := range set {
			live[id] = true
		}
	}
	seenByKilled := 0
	for id := range live {
		if o := before.Ops[id]; o != nil && slices.Contains(o.SeenBy, fps[1].admin) {
			seenByKilled++
		}
	}
	if seenByKilled == 0 {
		t.Fatalf("no followed operation was seen by %s: nginx did not spread the calls", fps[1].admin)
	}

	// Kill the proxy on 127.0.0.3: its operations show "?" with the
	// reason within a refresh; nothing else changes.
	killed := fps[1]
	name := killed.admin
	killed.stop()
	after, took := await("the killed proxy's operations unknown", 10*fleetRefresh+20*time.Second, func(d fleetDoc) bool {
		down := false
		for _, p := range d.Proxies {
			down = down || (p.Name == name && !p.Up && p.Reason != "")
		}
		if !down {
			return false
		}
		// The operations still followed (polled) that it saw.
		for id := range live {
			if o := before.Ops[id]; o != nil && slices.Contains(o.SeenBy, name) && (d.Ops[id] == nil || !strings.Contains(d.Ops[id].Unknown, name)) {
				return false
			}
		}
		return true
	})
	t.Logf("FLEET: proxy %s killed; its operations shown unknown after %s (refresh %s)", name, took.Round(10*time.Millisecond), fleetRefresh)
	for id, o := range before.Ops {
		a := after.Ops[id]
		if slices.Contains(o.SeenBy, name) || a == nil {
			continue
		}
		if a.Unknown != "" || !slices.Equal(o.Flags, a.Flags) {
			t.Errorf("operation %s, not seen by the killed proxy, changed: %+v → %+v", id, o, a)
		}
	}
	if m := metricLines(t, surl, stok, "dbxtop_proxy_up{"); !slices.ContainsFunc(m, func(l string) bool {
		return strings.Contains(l, `proxy="`+name+`"`) && strings.HasSuffix(l, " 0")
	}) {
		t.Errorf("dbxtop_proxy_up after the kill: %v", m)
	}

	// Restarted on the same addresses: it rejoins.
	killed.start(t, s)
	await("the restarted proxy rejoined", 10*fleetRefresh+20*time.Second, func(d fleetDoc) bool {
		for _, p := range d.Proxies {
			if p.Name == name && !p.Up {
				return false
			}
		}
		for id := range live {
			if o := d.Ops[id]; o != nil && strings.Contains(o.Unknown, name) {
				return false
			}
		}
		return len(d.Proxies) == 3
	})

	// With --close-abandoned 30s and --peers: the orphan, whose client is
	// gone, is cancelled (then closed, once the close outage ends) when no
	// replica saw a call for 30 s; the statements their client still
	// polls (through every replica) never are.
	tr = waitFor(t, s, 2*fleetAbandon+30*time.Second, "the orphan cancelled by a replica after --close-abandoned", func(tr truth) bool {
		o, ok := tr.op(orphan)
		return ok && (!o.Open || o.State == "CANCELED")
	})
	for id := range want.healthy {
		if o, ok := tr.op(id); !ok || !o.Open || o.State != "RUNNING" {
			t.Errorf("a statement its client still polls was closed or ended: %+v", o)
		}
	}
	var acted int64
	for _, fp := range fps {
		fp.mu.Lock()
		if fp.srv != nil {
			acted += fp.srv.Stats().AbandonActions
		}
		fp.mu.Unlock()
	}
	t.Logf("FLEET: %s: the orphan cancelled by a replica (%d abandonment actions); the polled statements still run", time.Since(t0).Round(time.Second), acted)
	cancel()
}

// metricLines are serve's /metrics lines starting with prefix.
func metricLines(t testing.TB, url, token, prefix string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// runNodeResult is runNode for a goroutine, returning at the script's
// result line: @databricks/sql's pooled keep-alive socket to nginx
// keeps the process alive until nginx closes it (about a minute), so the
// process is stopped once it has said its result.
func runNodeResult(modules, script string, env ...string) nodeResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "node", filepath.Join("node", script))
	c.Env = append(os.Environ(), append(env, "NODE_PATH="+modules)...)
	out, err := c.StdoutPipe()
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		return nodeResult{Failed: -1, Errors: []string{err.Error()}}
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	var last string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		last = sc.Text()
		var r nodeResult
		var keys map[string]json.RawMessage
		if strings.HasPrefix(last, "{") && json.Unmarshal([]byte(last), &keys) == nil && keys["ok"] != nil && keys["failed"] != nil &&
			json.Unmarshal([]byte(last), &r) == nil {
			return r
		}
	}
	return nodeResult{Failed: -1, Errors: []string{fmt.Sprintf("no result line; last output %.300q", last)}}
}
