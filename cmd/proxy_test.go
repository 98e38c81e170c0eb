package cmd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/sim"
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
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		a := newApp(pw, &errb, func(string) (string, bool) { return "", false })
		done <- a.run(ctx, []string{"proxy", "--upstream", s.URL(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^listen=(http://127\.0\.0\.1:\d+) admin=(http://127\.0\.0\.1:\d+) admin_token=([0-9a-f]{32})\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
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
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dbxtop proxy did not stop")
	}
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
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		var errb bytes.Buffer
		done := make(chan int, 1)
		go func() {
			a := newApp(pw, &errb, func(string) (string, bool) { return "", false })
			done <- a.run(ctx, tc.args)
			pw.Close()
		}()
		line, err := bufio.NewReader(pr).ReadString('\n')
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		cancel()
		if code := <-done; code != 0 || err != nil {
			t.Fatalf("%v: exit %d, %v, stderr %q", tc.args, code, err, errb.String())
		}
		if !regexp.MustCompile(tc.re).MatchString(line) {
			t.Errorf("%v: first line %q", tc.args, line)
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
