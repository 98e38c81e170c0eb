package proxy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/dnstest"
	"github.com/dbxtop/dbxtop/internal/targets"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// startReplica starts a proxy whose admin API takes token, as the
// replicas of one deployment share one.
func startReplica(t *testing.T, upstream, token string, o Options) *Server {
	t.Helper()
	p, err := startReplicaAt(t, upstream, token, "127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startReplicaAt starts a replica whose admin API listens on admin.
func startReplicaAt(t *testing.T, upstream, token, admin string, o Options) (*Server, error) {
	t.Helper()
	o.Upstream = upstream
	o.Tick = 50 * time.Millisecond
	o.CloseDefer = 100 * time.Millisecond
	o.Heal, o.Policy = true, fastPolicy()
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	p, err := Start(context.Background(), o, ServeOptions{Listen: "127.0.0.1:0", AdminListen: admin, AdminToken: token})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("proxy close: %v", err)
		}
	})
	return p, nil
}

// metric reads one sample of the proxy's /metrics (0 when absent).
func metric(t *testing.T, s *Server, sample string) float64 {
	t.Helper()
	return metricVia(t, http.DefaultClient, s, sample)
}

// metricVia is metric through hc (a client that trusts a test CA).
func metricVia(t *testing.T, hc *http.Client, s *Server, sample string) float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.AdminURL()+adminapi.PathMetrics, nil)
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sample, err)
			}
			return f
		}
	}
	return 0
}

// pollThrough polls ref with c every 100 ms until the returned stop is
// called; stop returns the first poll's error.
func pollThrough(ctx context.Context, t *testing.T, c *thrift.Client, ref sources.Ref) (stop func() error) {
	t.Helper()
	done, errc := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			if _, err := c.GetOperationStatus(ctx, ref); err != nil {
				errc <- err
				return
			}
			select {
			case <-done:
				errc <- nil
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() error {
		close(done)
		return <-errc
	}
}

func opEvents(t *testing.T, s *Server, id string) string {
	var doc adminapi.OperationsDoc
	adminGet(t, s, adminapi.PathOperations, &doc)
	var b strings.Builder
	for _, o := range doc.Operations {
		if o.StatementID == id {
			for _, a := range o.Actions {
				b.WriteString(a.Kind + ": " + a.Message + "\n")
			}
		}
	}
	return b.String()
}

// TestReplicasCloseOnlyWhatNoPeerSawCalled: two replicas behind one
// (imagined) load balancer find each other in a file_sd file that lists
// both. A statement starts through A and is then polled only through B:
// A alone would call it abandoned; asking B, it sees the later calls and
// leaves it alone for as long as the client polls. Once the client stops,
// it is closed as abandoned.
func TestReplicasCloseOnlyWhatNoPeerSawCalled(t *testing.T) {
	const window = 2 * time.Second // above a loaded machine's pauses between two polls
	const token = "replica-admin-token-1"
	s := startSim(t, "")
	file := filepath.Join(t.TempDir(), "proxies.json")
	src, err := targets.Parse("file://"+file, targets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{CloseAbandoned: window, ServerIdleTimeout: time.Minute, Peers: src}
	a, b := startReplica(t, s.URL(), token, o), startReplica(t, s.URL(), token, o)
	if err := os.WriteFile(file, []byte(`[{"targets": ["`+strings.TrimPrefix(a.AdminURL(), "http://")+`", "`+
		strings.TrimPrefix(b.AdminURL(), "http://")+`"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	op := execute(ctx, t, client(t, a.URL(), s.Token(), "testapp/1.0 (through a)"), wh, "SELECT sleep(600)")
	id := op.Ref.StatementID
	viaB := client(t, b.URL(), s.Token(), "testapp/1.0 (through b)")

	// The client polls through B until A has looked, asked B and held
	// back at least twice.
	stop := pollThrough(ctx, t, viaB, op.Ref)
	waitFor(t, "A holding back twice on B's evidence", 45*time.Second, func() bool {
		if !simOpen(s, id) {
			t.Fatalf("the statement was closed while its client polled it through B; A's events:\n%s", opEvents(t, a, id))
		}
		return metric(t, a, `dbxtop_proxy_peer_checks_total{outcome="later_call"}`) >= 2
	})
	if err := stop(); err != nil {
		t.Fatalf("a poll through B: %v", err)
	}
	if n := metric(t, a, `dbxtop_proxy_peer_checks_total{outcome="act"}`); n != 0 {
		t.Errorf("A acted %v times while the client polled through B", n)
	}
	if n := metric(t, a, "dbxtop_proxy_peers"); n != 1 {
		t.Errorf("A counted %v peers, want 1 (the file lists A itself too)", n)
	}
	if ev := opEvents(t, a, id); !strings.Contains(ev, "a peer saw a client call") {
		t.Errorf("A's events lack the peer's evidence:\n%s", ev)
	}
	// The client goes away: the whole picture now says abandoned. One
	// replica closes it; the other learns from it that it ended.
	waitFor(t, "the abandoned statement closed", 30*time.Second, func() bool { return !simOpen(s, id) })
	waitFor(t, "both replicas holding it ended", 30*time.Second, func() bool {
		return outcome(t, a, id) != sources.ProxyOpen && outcome(t, b, id) != sources.ProxyOpen
	})
	if oa, ob := outcome(t, a, id), outcome(t, b, id); oa != sources.ProxyClosedByProxy && ob != sources.ProxyClosedByProxy {
		t.Errorf("outcomes %s (A) and %s (B): want one closed by a proxy", oa, ob)
	}
}

// outcome is the close outcome s holds for id ("" when it holds none).
func outcome(t *testing.T, s *Server, id string) string {
	var doc adminapi.OperationsDoc
	adminGet(t, s, adminapi.PathOperations, &doc)
	for _, o := range doc.Operations {
		if o.StatementID == id {
			return o.Close.Outcome
		}
	}
	return ""
}

// TestAReplicaThatCannotAskEveryPeerClosesNothing: one peer is down; the
// abandoned statement stays open, with the reason as an event and the
// unreachable count in /metrics.
func TestAReplicaThatCannotAskEveryPeerClosesNothing(t *testing.T) {
	const token = "replica-admin-token-2"
	s := startSim(t, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	src, err := targets.ParseAll([]string{"http://" + dead}, targets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := startReplica(t, s.URL(), token, Options{CloseAbandoned: 300 * time.Millisecond, ServerIdleTimeout: time.Minute, Peers: src})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op := execute(ctx, t, client(t, a.URL(), s.Token(), "testapp/1.0"), s.WarehouseIDs()[0], "SELECT sleep(600)")
	waitFor(t, "two looks that could not ask the peer", 30*time.Second, func() bool {
		return metric(t, a, `dbxtop_proxy_peer_checks_total{outcome="unreachable"}`) >= 2
	})
	if !simOpen(s, op.Ref.StatementID) {
		t.Fatal("a replica that could not ask its peer closed the statement")
	}
	if ev := opEvents(t, a, op.Ref.StatementID); !strings.Contains(ev, "not every peer could be asked") || !strings.Contains(ev, dead) {
		t.Errorf("events lack the reason naming the peer:\n%s", ev)
	}
}

// TestCallsOnOperationsStartedElsewhereTurnAbandonmentOff: without
// peers, a proxy polled for an operation it never saw start (past its
// grace) is behind a load balancer spreading sessions: it turns
// abandonment off, says so in /metrics, and leaves a statement alone
// that it would otherwise close.
func TestCallsOnOperationsStartedElsewhereTurnAbandonmentOff(t *testing.T) {
	const grace = 300 * time.Millisecond // the window
	s := startSim(t, "")
	logs := &logBuf{}
	a := startReplica(t, s.URL(), "replica-admin-token-3", Options{CloseAbandoned: grace, ServerIdleTimeout: time.Minute,
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	started := time.Now()
	waitFor(t, "the grace after start", 10*time.Second, func() bool { return time.Since(started) > 2*grace })
	// Started through another replica (here: straight at the server),
	// polled through this one.
	elsewhere := execute(ctx, t, client(t, s.URL(), s.Token(), "testapp/1.0 (other replica)"), wh, "SELECT sleep(600)")
	here := client(t, a.URL(), s.Token(), "testapp/1.0")
	if _, err := here.GetOperationStatus(ctx, elsewhere.Ref); err != nil {
		t.Fatal(err)
	}
	if v := metric(t, a, "dbxtop_proxy_abandonment_disabled"); v != 1 {
		t.Fatalf("dbxtop_proxy_abandonment_disabled %v, want 1", v)
	}
	if v := metric(t, a, `dbxtop_proxy_unopened_calls_total{kind="operation"}`); v != 1 {
		t.Errorf(`unopened_calls_total{kind="operation"} %v, want 1`, v)
	}
	if !strings.Contains(logs.String(), "abandonment disabled") {
		t.Errorf("no WARN line says abandonment is off:\n%s", logs.String())
	}
	op := execute(ctx, t, here, wh, "SELECT sleep(600)")
	waitFor(t, "abandonment looks refused", 30*time.Second, func() bool {
		return metric(t, a, `dbxtop_proxy_peer_checks_total{outcome="disabled"}`) >= 3
	})
	if !simOpen(s, op.Ref.StatementID) || !simOpen(s, elsewhere.Ref.StatementID) {
		t.Fatal("a statement was closed as abandoned by a proxy behind a load balancer without peers")
	}
}

// The last-call read is behind the admin token, answers for an id it
// never saw without repeating it, and refuses an over-long id.
func TestLastCallIsBehindTheTokenAndBounded(t *testing.T) {
	s := startSim(t, "")
	a := startReplica(t, s.URL(), "replica-admin-token-4", Options{})
	path := adminapi.LastCallPath("01234567-89ab-cdef-0123-456789abcdef")
	if code, _ := get(t, a.AdminURL()+path, ""); code != 401 {
		t.Errorf("without the token: HTTP %d, want 401", code)
	}
	var lc adminapi.LastCall
	if code := adminGet(t, a, path+"?session=x", &lc); code != 200 || lc.Known || lc.SessionKnown || lc.Instance != a.Instance() {
		t.Errorf("an unknown id: HTTP %d %+v, want 200, nothing known, instance %s", code, lc, a.Instance())
	}
	if code, body := get(t, a.AdminURL()+adminapi.LastCallPath(strings.Repeat("a", 100)), a.AdminToken()); code != 400 || strings.Contains(body, strings.Repeat("a", 100)) {
		t.Errorf("an over-long id: HTTP %d %s, want 400 without the id", code, body)
	}
}

// TestReplicasFindEachOtherByDNS: two replicas whose admin APIs listen on
// 127.0.0.2 and 127.0.0.3 (one port) find each other through a name the
// test's DNS server resolves to both, each skipping itself; a statement
// polled only through B is left alone by A.
func TestReplicasFindEachOtherByDNS(t *testing.T) {
	const token = "replica-admin-token-5"
	s := startSim(t, "")
	dns := dnstest.Start(t, map[string][]string{"replicas.dbxtop.test": {"127.0.0.2", "127.0.0.3"}})
	r, err := targets.NewResolver(dns.Addr())
	if err != nil {
		t.Fatal(err)
	}
	var a, b *Server
	for try := 0; b == nil; try++ {
		if try == 10 {
			t.Fatal("no admin port free on both 127.0.0.2 and 127.0.0.3")
		}
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		src, err := targets.Parse("dns+http://replicas.dbxtop.test:"+strconv.Itoa(port), targets.Options{Resolver: r})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{CloseAbandoned: 2 * time.Second, ServerIdleTimeout: time.Minute, Peers: src}
		if a, err = startReplicaAt(t, s.URL(), token, "127.0.0.2:"+strconv.Itoa(port), o); err != nil {
			continue
		}
		if b, err = startReplicaAt(t, s.URL(), token, "127.0.0.3:"+strconv.Itoa(port), o); err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = a.Close(ctx)
			cancel()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op := execute(ctx, t, client(t, a.URL(), s.Token(), "testapp/1.0 (through a)"), s.WarehouseIDs()[0], "SELECT sleep(600)")
	stop := pollThrough(ctx, t, client(t, b.URL(), s.Token(), "testapp/1.0 (through b)"), op.Ref)
	waitFor(t, "A holding back on B's evidence", 45*time.Second, func() bool {
		if !simOpen(s, op.Ref.StatementID) {
			t.Fatalf("the statement was closed while its client polled it through B; A's events:\n%s", opEvents(t, a, op.Ref.StatementID))
		}
		return metric(t, a, `dbxtop_proxy_peer_checks_total{outcome="later_call"}`) >= 1
	})
	if err := stop(); err != nil {
		t.Fatalf("a poll through B: %v", err)
	}
	if n := metric(t, a, "dbxtop_proxy_peers"); n != 1 {
		t.Errorf("A counted %v peers, want 1 (the name lists A itself too)", n)
	}
	if dns.Queries() == 0 {
		t.Error("the name was never resolved through the test's DNS server")
	}
}

// TestPeerTokenFromTheFileSDLabel: replicas with their own admin tokens;
// the file_sd group names each peer's token file. With the right file A
// asks B and acts on the abandoned statement; with a wrong one B refuses
// (401) and A closes nothing.
func TestPeerTokenFromTheFileSDLabel(t *testing.T) {
	s := startSim(t, "")
	dir := t.TempDir()
	b := startReplica(t, s.URL(), "replica-b-token", Options{})
	for _, tc := range []struct {
		name, token string
		closed      bool
	}{{"right token", "replica-b-token", true}, {"wrong token", "not-b-token", false}} {
		t.Run(tc.name, func(t *testing.T) {
			tok := filepath.Join(dir, tc.name+".token")
			if err := os.WriteFile(tok, []byte(tc.token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, tc.name+".json")
			if err := os.WriteFile(file, []byte(`[{"targets": ["`+strings.TrimPrefix(b.AdminURL(), "http://")+
				`"], "labels": {"__dbxtop_token_file__": "`+filepath.Base(tok)+`"}}]`), 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := targets.Parse("file://"+file, targets.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := startReplica(t, s.URL(), "replica-a-token", Options{CloseAbandoned: 300 * time.Millisecond, ServerIdleTimeout: time.Minute, Peers: src})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			op := execute(ctx, t, client(t, a.URL(), s.Token(), "testapp/1.0"), s.WarehouseIDs()[0], "SELECT sleep(600)")
			if tc.closed {
				waitFor(t, "the abandoned statement closed", 30*time.Second, func() bool { return !simOpen(s, op.Ref.StatementID) })
				if n := metric(t, a, `dbxtop_proxy_peer_checks_total{outcome="unreachable"}`); n != 0 {
					t.Errorf("%v looks could not ask B", n)
				}
				return
			}
			waitFor(t, "a look B refused", 30*time.Second, func() bool {
				return metric(t, a, `dbxtop_proxy_peer_checks_total{outcome="unreachable"}`) >= 1
			})
			if ev := opEvents(t, a, op.Ref.StatementID); !simOpen(s, op.Ref.StatementID) || !strings.Contains(ev, "HTTP 401") || strings.Contains(ev, tc.token) {
				t.Errorf("open %v; events (want HTTP 401, not the token):\n%s", simOpen(s, op.Ref.StatementID), ev)
			}
		})
	}
}

// selfSignedCA writes a certificate for 127.0.0.1 that is its own CA, and
// its key, into dir; pool trusts it.
func selfSignedCA(t *testing.T, dir string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dbxtop test replicas"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(must(x509.ParseCertificate(der)))
	return cert, key, pool
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestPeersOverTLSTrustTheirCA: replicas serving TLS ask each other over
// HTTPS (file_sd __scheme__: https), trusting the CA --peer-ca gives; a
// replica without it cannot verify its peer and closes nothing.
func TestPeersOverTLSTrustTheirCA(t *testing.T) {
	const token = "replica-admin-token-6"
	s := startSim(t, "")
	dir := t.TempDir()
	cert, key, pool := selfSignedCA(t, dir)
	file := filepath.Join(dir, "replicas.yml")
	src, err := targets.Parse("file://"+file, targets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := func(roots *x509.CertPool) *Server {
		o := Options{Upstream: s.URL(), Tick: 50 * time.Millisecond, Heal: true, Policy: fastPolicy(), Logger: testLogger(t),
			CloseAbandoned: 2 * time.Second, ServerIdleTimeout: time.Minute, Peers: src, PeerRootCAs: roots}
		p, err := Start(context.Background(), o, ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", AdminToken: token, TLSCert: cert, TLSKey: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.Close(ctx)
		})
		return p
	}
	a, b, blind := start(pool), start(pool), start(nil)
	var list []string
	for _, r := range []*Server{a, b, blind} {
		list = append(list, strings.TrimPrefix(r.AdminURL(), "https://"))
	}
	if err := os.WriteFile(file, []byte("- targets: ['"+strings.Join(list, "', '")+"']\n  labels: {__scheme__: https}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	tlsClient := func(host string) *thrift.Client {
		c, err := thrift.NewClient(thrift.Options{Host: host, Token: s.Token(), UserAgent: "testapp/1.0", Timeout: 20 * time.Second, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.CloseIdleConnections)
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]
	op := execute(ctx, t, tlsClient(a.URL()), wh, "SELECT sleep(600)")
	left := execute(ctx, t, tlsClient(blind.URL()), wh, "SELECT sleep(600)")
	stop := pollThrough(ctx, t, tlsClient(b.URL()), op.Ref)
	tlsMetric := func(r *Server, sample string) float64 { return metricVia(t, &http.Client{Transport: tr}, r, sample) }
	waitFor(t, "A holding back on B's evidence over HTTPS", 45*time.Second, func() bool {
		return tlsMetric(a, `dbxtop_proxy_peer_checks_total{outcome="later_call"}`) >= 1 &&
			tlsMetric(blind, `dbxtop_proxy_peer_checks_total{outcome="unreachable"}`) >= 1
	})
	if err := stop(); err != nil {
		t.Fatalf("a poll through B: %v", err)
	}
	if n := tlsMetric(a, `dbxtop_proxy_peer_checks_total{outcome="unreachable"}`); n != 0 {
		t.Errorf("A could not ask its peers %v times", n)
	}
	if !simOpen(s, op.Ref.StatementID) || !simOpen(s, left.Ref.StatementID) {
		t.Error("a statement was closed: one polled through B, or one left on the replica that cannot verify its peers")
	}
}
