package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/sim"
)

// lockedBuf is a bytes buffer the serve goroutine writes while the test reads.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeAsAService: serve with its tokens in files prints no token,
// logs JSON events to stderr (slog) with no secret in them, refuses an
// action sent with the read token, and drains on cancellation (SIGTERM
// in main) with exit 0.
func TestServeAsAService(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Warehouses: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close(context.Background()) }()
	dir := t.TempDir()
	const read, act = "read-0123456789abcdef", "act-0123456789abcdef"
	for name, tok := range map[string]string{"read": read + "\n", "act": act} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pr, pw := io.Pipe()
	var stderr lockedBuf
	env := map[string]string{"DATABRICKS_TOKEN": srv.Token(), "HOME": dir, "STATE_DIRECTORY": filepath.Join(dir, "state")}
	a := newApp(pw, &stderr, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	runCtx, stop := context.WithCancel(ctx)
	code := make(chan int, 1)
	go func() {
		code <- a.run(runCtx, []string{"serve", "--host", srv.URL(), "--listen", "127.0.0.1:0", "--refresh", "200ms",
			"--serve-token-file", filepath.Join(dir, "read"), "--act-token-file", filepath.Join(dir, "act"), "--log-format", "json"})
		_ = pw.Close()
	}()
	first, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v; stderr:\n%s", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(first), "listen=")
	if !ok || strings.Contains(first, "token") || strings.Contains(first, read) {
		t.Fatalf("first line %q: want listen=URL and no token", first)
	}

	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/operations/01234567-89ab-cdef-0123-456789abcdef/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+read)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cancel with the read token: %d", resp.StatusCode)
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(url + probe)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s without a token: %d", probe, resp.StatusCode)
		}
	}

	stop()
	select {
	case c := <-code:
		if c != exitOK {
			t.Fatalf("serve exit %d after cancellation; stderr:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not drain within 30s")
	}
	msgs := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if ev["component"] != "serve" || ev["level"] == nil || ev["time"] == nil {
			t.Errorf("log line lacks component, level or time: %q", line)
		}
		msgs[ev["msg"].(string)] = true
	}
	if !msgs["serving"] || !msgs["stopped"] {
		t.Errorf("log lacks serving or stopped: %v", msgs)
	}
	for _, secret := range []string{read, act, srv.Token()} {
		if strings.Contains(stderr.String(), secret) {
			t.Errorf("a secret reached the log:\n%s", stderr.String())
		}
	}
}

// TestServeWebConfigReplacesTLSFlags: giving both is a usage error.
func TestServeWebConfigReplacesTLSFlags(t *testing.T) {
	r := runCLI(t, map[string]string{"DATABRICKS_TOKEN": "t"}, "serve", "--host", "https://h.example.com",
		"--web.config.file", "serve_test.go", "--tls-cert", "serve_test.go", "--tls-key", "serve_test.go")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--web.config.file replaces --tls-cert and --tls-key") {
		t.Fatalf("%+v", r)
	}
}
