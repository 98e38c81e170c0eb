package cmd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/dnstest"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

func TestProxyFlagRefusals(t *testing.T) {
	empty := t.TempDir() + "/empty-token"
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "needs --upstream"},
		{[]string{"proxy", "--upstream", "http://example.com"}, "plain http only to a loopback address"},
		{[]string{"proxy", "--upstream", "https://x", "--listen", "0.0.0.0:8444"}, "not loopback"},
		{[]string{"proxy", "--upstream", "https://x", "--admin-listen", "10.0.0.1:1"}, "not loopback"},
		{[]string{"proxy", "--upstream", "https://x", "--tls-cert", "c.pem"}, "go together"},
		{[]string{"proxy", "--upstream", "https://x", "--heal", "maybe"}, "want on or off"},
		{[]string{"proxy", "--upstream", "https://x", "--close-abandoned", "5"}, "missing unit"},
		{[]string{"proxy", "--upstream", "https://x", "--close-abandoned", "5s"}, "--force-short-window"},
		{[]string{"proxy", "--upstream", "https://x", "--act-as", "proxy"}, "needs the proxy's own credentials"},
		{[]string{"proxy", "--upstream", "https://x", "--act-as", "root"}, "must be one of client, proxy"},
		{[]string{"proxy", "--upstream", "https://x", "--log-format", "xml"}, "must be one of text, json"},
		{[]string{"proxy", "--upstream", "https://x", "--admin-token", "t", "--admin-token-file", empty}, "two ways to give one token"},
		{[]string{"proxy", "--upstream", "https://x", "--admin-token-file", empty}, "--admin-token-file: " + empty + " is empty"},
		{[]string{"proxy", "--upstream", "https://x", "--peers", "127.0.0.1:8445"}, "invalid --peers"},
		{[]string{"proxy", "--upstream", "https://x", "--peers", "http://u:pw@127.0.0.1:8445", "--admin-token", "t"}, "credentials in the URL"},
		{[]string{"proxy", "--upstream", "https://x", "--peers", "dns+http://proxies:8445"}, "--peers needs the admin token"},
		{[]string{"proxy", "--upstream", "https://x", "--peer-token-file", empty}, "give --peers too"},
		{[]string{"proxy", "--upstream", "https://x", "--peers", "file:///x.json", "--admin-token", "t", "--peer-ca", empty}, "holds no PEM certificate"},
		{[]string{"proxy", "--upstream", "https://x", "--peers", "file:///x.json", "--peer-token-file", empty}, "--peer-token-file: " + empty + " is empty"},
		{[]string{"proxy", "--upstream", "https://x", "--dns-server", "localhost:53"}, "want IP:PORT"},
	} {
		r := runCLI(t, nil, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestProxyFirstLine runs `dbxtop proxy` on free ports in front of a
// simulator and checks the first line scripts parse, then that the admin
// URL and token on it work.
func TestProxyFirstLine(t *testing.T) {
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioQuiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	r := runUntilFirstLine(t, "proxy", "--upstream", s.URL(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`^listen=(http://127\.0\.0\.1:\d+) admin=(http://127\.0\.0\.1:\d+) admin_token=([0-9a-f]{32})\n$`).FindStringSubmatch(r.line)
	if m == nil {
		t.Fatalf("first line %q", r.line)
	}
	req, _ := http.NewRequest(http.MethodGet, m[2]+"/v1/health", nil)
	req.Header.Set("Authorization", "Bearer "+m[3])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("admin health: HTTP %d", resp.StatusCode)
	}
	r.cancel()
	r.wait(t, 10*time.Second)
}

// TestSimFirstLineNamesTheEmbeddedProxy: `dbxtop sim` (scenario demo) runs
// the embedded proxy and says where, with the timeouts; quiet runs none.
func TestSimFirstLineNamesTheEmbeddedProxy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		re   string
	}{
		{[]string{"sim", "--listen", "127.0.0.1:0"},
			`^host=http://127\.0\.0\.1:\d+ token=[0-9a-f]{32} idle_timeout=1m30s leak_timeout=2m30s proxy=http://127\.0\.0\.1:\d+ proxy_token=[0-9a-f]{32}\n$`},
		{[]string{"sim", "--listen", "127.0.0.1:0", "--scenario", "quiet"},
			`^host=http://127\.0\.0\.1:\d+ token=[0-9a-f]{32} idle_timeout=7m10s leak_timeout=23m0s\n$`},
	} {
		r := runUntilFirstLine(t, tc.args...)
		r.cancel()
		r.wait(t, 30*time.Second)
		if !regexp.MustCompile(tc.re).MatchString(r.line) {
			t.Errorf("%v: first line %q", tc.args, r.line)
		}
	}
}

// The proxy's log writer never blocks its caller: a stuck destination
// costs dropped records (counted), not a held lock; what was queued is
// written at Close, and a late record is dropped, not a panic.
func TestProxyAsyncLogWriter(t *testing.T) {
	var mu sync.Mutex
	var got []string
	release := make(chan struct{})
	w := writerFunc(func(b []byte) (int, error) {
		<-release
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(b))
		return len(b), nil
	})
	a := newAsyncWriter(w, 2)
	for i := 0; i < 10; i++ {
		_, _ = a.Write([]byte("record\n")) // never blocks on the stuck writer
	}
	close(release)
	dropped := a.Close()
	_, _ = a.Write([]byte("late\n"))
	mu.Lock()
	defer mu.Unlock()
	if int64(len(got))+dropped != 10 || dropped == 0 {
		t.Errorf("written %d, dropped %d of 10", len(got), dropped)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// running is a dbxtop command run in-process until the test stops it.
type running struct {
	line   string // its first line of output
	errb   *syncBuf
	cancel context.CancelFunc // what SIGINT/SIGTERM do to the command
	done   chan int
}

// runUntilFirstLine runs dbxtop with args and reads its first line; the
// rest of its output is discarded.
func runUntilFirstLine(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &running{errb: &syncBuf{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		a := newApp(pw, r.errb, func(string) (string, bool) { return "", false })
		r.done <- a.run(ctx, args)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err != nil {
		cancel()
		t.Fatalf("%v: no first line (%v; exit %d), stderr %q", args, err, <-r.done, r.errb.String())
	}
	r.line = line
	t.Cleanup(cancel)
	return r
}

// wait waits up to limit for the command to exit, and wants it to exit 0.
func (r *running) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case code := <-r.done:
		if code != 0 {
			t.Errorf("exit %d, stderr %q", code, r.errb.String())
		}
	case <-time.After(limit):
		t.Fatalf("dbxtop did not stop within %v", limit)
	}
}

// syncBuf is a stderr the test reads while the command writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProxySignalDrains: SIGTERM (the command's context ending) drains
// rather than stops: /v1/ready fails, a held statement is still polled
// through the proxy, and at --drain-timeout the statement is left open
// on the server with one WARN line, and the command exits 0.
func TestProxySignalDrains(t *testing.T) {
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioQuiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	r := runUntilFirstLine(t, "proxy", "--upstream", s.URL(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--drain-timeout", "2s")
	m := regexp.MustCompile(`^listen=(\S+) admin=(\S+) admin_token=`).FindStringSubmatch(r.line)
	if m == nil {
		t.Fatalf("first line %q", r.line)
	}
	c, err := thrift.NewClient(thrift.Options{Host: m[1], Token: s.Token(), UserAgent: "job/1.0", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	sess, err := c.OpenSession(context.Background(), s.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Execute(context.Background(), sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	ready := func() int {
		resp, err := http.Get(m[2] + "/v1/ready")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := ready(); code != http.StatusOK {
		t.Fatalf("ready before the signal: %d", code)
	}
	r.cancel()
	deadline := time.Now().Add(10 * time.Second)
	for ready() != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("/v1/ready did not fail after the signal")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.GetOperationStatus(context.Background(), op.Ref); err != nil {
		t.Errorf("a poll of the held statement while draining: %v", err)
	}
	r.wait(t, 30*time.Second)
	if !strings.Contains(r.errb.String(), "drain timeout with operations still open") {
		t.Errorf("no WARN for the statement left open:\n%s", r.errb.String())
	}
	for _, o := range s.Truth().Operations {
		if o.StatementID == op.Ref.StatementID && !o.Open {
			t.Error("the drain closed the running statement")
		}
	}
}

// TestProxyFirstLineKeepsAFileTokenOut: a token the operator gave in a
// file (a systemd credential) is not printed on the first line, which
// lands in the journal; the line names the file flag instead.
func TestProxyFirstLineKeepsAFileTokenOut(t *testing.T) {
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioQuiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	const token = "file-token-0123456789abcdef"
	tf := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tf, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runUntilFirstLine(t, "proxy", "--upstream", s.URL(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--admin-token-file", tf)
	if strings.Contains(r.line, token) || !strings.HasSuffix(r.line, " admin_token=(--admin-token-file)\n") {
		t.Errorf("first line %q: want the token kept out and the file flag named", r.line)
	}
	r.cancel()
	r.wait(t, 30*time.Second)
}

// TestProxyPeersResolveThroughTheHiddenDNSServer: --dns-server makes the
// dns+ --peers resolve through that server alone (the fleet tests' names).
func TestProxyPeersResolveThroughTheHiddenDNSServer(t *testing.T) {
	dns := dnstest.Start(t, map[string][]string{"replicas.dbxtop.test": {"127.0.0.2", "127.0.0.3"}})
	src, err := peerSource(ProxyConfig{Peers: []string{"dns+http://replicas.dbxtop.test:8445", "http://127.0.0.4:8445"}, DNSServer: dns.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := src.Targets(t.Context())
	var got []string
	for _, tg := range ts {
		got = append(got, tg.URL)
	}
	if want := "http://127.0.0.2:8445 http://127.0.0.3:8445 http://127.0.0.4:8445"; err != nil || strings.Join(got, " ") != want {
		t.Fatalf("targets %v, err %v; want %s", got, err, want)
	}
}
