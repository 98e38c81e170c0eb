package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
)

// serveUnitPath is the shipped systemd unit.
const serveUnitPath = "../contrib/systemd/dbxtop-serve.service"

// unit reads the shipped unit's ExecStart and Environment lines.
func readServeUnit(t *testing.T) (execStart []string, env []string, text string) {
	t.Helper()
	b, err := os.ReadFile(serveUnitPath)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			execStart = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			env = append(env, v)
		}
	}
	if len(execStart) < 2 || execStart[1] != "serve" {
		t.Fatalf("ExecStart %q: want dbxtop serve …", execStart)
	}
	return execStart, env, string(b)
}

// TestSystemdUnitVerifies: systemd-analyze verify accepts the shipped
// unit with ExecStart pointed at the built binary, and the unit keeps its
// hardening and its credentials.
func TestSystemdUnitVerifies(t *testing.T) {
	budget(t)
	sa := testenv.Tool(t, "systemd-analyze") // Debian: systemd
	execStart, _, text := readServeUnit(t)
	for _, want := range []string{"DynamicUser=yes", "ProtectSystem=strict", "StateDirectory=dbxtop", "NoNewPrivileges=yes",
		"LoadCredential=serve-token:", "LoadCredential=act-token:", "LoadCredential=databrickscfg:",
		"Environment=DATABRICKS_CONFIG_FILE=%d/databrickscfg", "--serve-token-file %d/serve-token", "--act-token-file %d/act-token"} {
		if !strings.Contains(text, want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	dir := t.TempDir()
	copyPath := filepath.Join(dir, "dbxtop-serve.service")
	if err := os.WriteFile(copyPath, []byte(strings.Replace(text, "ExecStart="+execStart[0], "ExecStart="+bin, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", copyPath).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestServeAsTheUnitRunsIt: the unit's own command line and environment,
// with its credentials directory (%d) and STATE_DIRECTORY as systemd sets
// them, against the simulator: serve prints no token, the read token
// cannot cancel, the act token can act, the log on stderr carries no
// secret, and SIGTERM drains to exit 0.
func TestServeAsTheUnitRunsIt(t *testing.T) {
	budget(t)
	execStart, unitEnv, _ := readServeUnit(t)
	home := t.TempDir()
	sim := startSim(t, home, "--scenario", "quiet", "--warehouses", "1")
	creds := filepath.Join(home, "credentials")
	state := filepath.Join(home, "state")
	for _, d := range []string{creds, state} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	const read, act = "unit-read-token-0123456789", "unit-act-token-0123456789"
	for name, content := range map[string]string{
		"serve-token":   read + "\n",
		"act-token":     act + "\n",
		"databrickscfg": fmt.Sprintf("[DEFAULT]\nhost = %s\ntoken = %s\n", sim.host, sim.token),
	} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := make([]string, 0, len(execStart))
	for _, a := range execStart[1:] {
		a = strings.ReplaceAll(a, "%d", creds)
		if a == "127.0.0.1:9464" {
			a = "127.0.0.1:0" // the port may be taken here
		}
		args = append(args, a)
	}
	env := []string{"STATE_DIRECTORY=" + state, "CREDENTIALS_DIRECTORY=" + creds}
	for _, e := range unitEnv {
		env = append(env, strings.ReplaceAll(e, "%d", creds))
	}
	p := start(t, home, env, append(args, "--refresh", "500ms")...)
	first := p.waitFirstLine(30 * time.Second)
	url, ok := strings.CutPrefix(first, "listen=")
	if !ok || strings.Contains(first, " ") || strings.Contains(first, read) {
		t.Fatalf("first line %q: want listen=URL alone", first)
	}
	cancel := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/operations/01234567-89ab-cdef-0123-456789abcdef/cancel", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := cancel(read); code != http.StatusForbidden {
		t.Errorf("cancel with the read token: %d, want 403", code)
	}
	if code := cancel(act); code != http.StatusNotFound {
		t.Errorf("cancel of an unknown statement with the act token: %d, want 404", code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready within 30s\n%s", p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _ := p.signalAndWait(syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s", code, p.stderr)
	}
	log := p.stderr.String()
	if !strings.Contains(log, "msg=serving") || !strings.Contains(log, "msg=stopped") {
		t.Errorf("log lacks serving or stopped:\n%s", log)
	}
	for _, secret := range []string{read, act, sim.token} {
		if strings.Contains(log, secret) || strings.Contains(p.stdout.String(), secret) {
			t.Errorf("a secret reached serve's output:\n%s", log)
		}
	}
}
