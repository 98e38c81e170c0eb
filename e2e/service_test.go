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

// The shipped systemd units.
const (
	serveUnitPath = "../contrib/systemd/dbxtop-serve.service"
	proxyUnitPath = "../contrib/systemd/dbxtop-proxy.service"
)

// readUnit reads a shipped unit's ExecStart (its ${VAR}s expanded from the
// unit's own Environment= lines, as systemd does) and Environment lines.
func readUnit(t *testing.T, path, command string) (execStart []string, env []string, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			execStart = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			env = append(env, v)
			if k, val, ok := strings.Cut(v, "="); ok {
				vars[k] = val
			}
		}
	}
	for i, a := range execStart {
		execStart[i] = os.Expand(a, func(k string) string { return vars[k] })
	}
	if len(execStart) < 2 || execStart[1] != command {
		t.Fatalf("%s: ExecStart %q: want dbxtop %s …", path, execStart, command)
	}
	return execStart, env, string(b)
}

// TestSystemdUnitsVerify: systemd-analyze verify accepts both shipped
// units with ExecStart pointed at the built binary; each keeps its
// hardening, its credentials and the service conventions (no restart on
// a configuration error, bounded memory, tasks and descriptors), and the
// proxy's stop timeout outlasts its drain.
func TestSystemdUnitsVerify(t *testing.T) {
	budget(t)
	sa := testenv.Tool(t, "systemd-analyze") // Debian: systemd
	common := []string{"DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "RestartPreventExitStatus=2",
		"MemoryMax=", "TasksMax=", "LimitNOFILE=", "Environment=GOMEMLIMIT="}
	units := []struct {
		path, command string
		want          []string
	}{
		{serveUnitPath, "serve", []string{"StateDirectory=dbxtop", "LoadCredential=serve-token:", "LoadCredential=act-token:",
			"LoadCredential=databrickscfg:", "LoadCredential=proxy-token:/etc/dbxtop/proxy-token",
			"Environment=DATABRICKS_CONFIG_FILE=%d/databrickscfg", "Environment=DBXTOP_PROXY_TOKEN_FILE=%d/proxy-token",
			"--serve-token-file %d/serve-token", "--act-token-file %d/act-token", "--proxy http://127.0.0.1:8445"}},
		{proxyUnitPath, "proxy", []string{"StateDirectory=dbxtop-proxy", "LoadCredential=proxy-token:/etc/dbxtop/proxy-token",
			"--admin-token-file %d/proxy-token", "--admin-listen 127.0.0.1:8445", "StandardOutput=null"}},
	}
	dir := t.TempDir()
	var paths []string
	for _, u := range units {
		execStart, _, text := readUnit(t, u.path, u.command)
		for _, want := range append(common, u.want...) {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", u.path, want)
			}
		}
		p := filepath.Join(dir, filepath.Base(u.path))
		if err := os.WriteFile(p, []byte(strings.Replace(text, "ExecStart="+execStart[0], "ExecStart="+bin, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	_, _, proxyText := readUnit(t, proxyUnitPath, "proxy")
	drain, stop := unitDuration(t, proxyText, "--drain-timeout "), unitDuration(t, proxyText, "TimeoutStopSec=")
	if stop <= drain {
		t.Errorf("proxy unit: TimeoutStopSec %v does not outlast --drain-timeout %v (the close queue's last run follows the drain)", stop, drain)
	}
	out, err := exec.Command(sa, append([]string{"verify"}, paths...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// unitDuration reads the Go duration after key in a unit's text.
func unitDuration(t *testing.T, text, key string) time.Duration {
	t.Helper()
	_, rest, ok := strings.Cut(text, key)
	if !ok {
		t.Fatalf("unit lacks %q", key)
	}
	d, err := time.ParseDuration(strings.Fields(rest)[0])
	if err != nil {
		t.Fatalf("%s%s: %v", key, strings.Fields(rest)[0], err)
	}
	return d
}

// unitArgs is a unit's ExecStart as systemd would run it: %d is the
// credentials directory, and the fixed ports become free ones (they may be
// taken here) through swap.
func unitArgs(execStart []string, creds string, swap map[string]string) []string {
	args := make([]string, 0, len(execStart))
	for _, a := range execStart[1:] {
		a = strings.ReplaceAll(a, "%d", creds)
		if v, ok := swap[a]; ok {
			a = v
		}
		args = append(args, a)
	}
	return args
}

// TestServeAsTheUnitRunsIt: both units' own command lines and
// environments, with their credentials directory (%d) and STATE_DIRECTORY
// as systemd sets them, against the simulator: the proxy unit takes its
// admin token from the credential and keeps its close queue in its state
// directory; serve reads that proxy with the same credential, prints no
// token, the read token cannot cancel, the act token can act, neither log
// carries a secret, and SIGTERM drains both to exit 0.
func TestServeAsTheUnitRunsIt(t *testing.T) {
	budget(t)
	serveStart, serveEnv, _ := readUnit(t, serveUnitPath, "serve")
	proxyStart, proxyEnv, _ := readUnit(t, proxyUnitPath, "proxy")
	home := t.TempDir()
	sim := startSim(t, home, "--scenario", "quiet", "--warehouses", "1")
	creds := filepath.Join(home, "credentials")
	state := filepath.Join(home, "state")
	proxyState := filepath.Join(home, "proxy-state")
	for _, d := range []string{creds, state, proxyState} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	const read, act, admin = "unit-read-token-0123456789", "unit-act-token-0123456789", "unit-proxy-token-0123456789"
	for name, content := range map[string]string{
		"serve-token":   read + "\n",
		"act-token":     act + "\n",
		"proxy-token":   admin + "\n",
		"databrickscfg": fmt.Sprintf("[DEFAULT]\nhost = %s\ntoken = %s\n", sim.host, sim.token),
	} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unitEnv := func(lines []string, stateDir string) []string {
		env := []string{"STATE_DIRECTORY=" + stateDir, "CREDENTIALS_DIRECTORY=" + creds}
		for _, e := range lines {
			env = append(env, strings.ReplaceAll(e, "%d", creds))
		}
		return env
	}

	// The proxy unit, in front of the simulator.
	pargs := unitArgs(proxyStart, creds, map[string]string{"127.0.0.1:8444": "127.0.0.1:0", "127.0.0.1:8445": "127.0.0.1:0"})
	for i := 1; i < len(pargs); i++ {
		if pargs[i-1] == "--upstream" {
			pargs[i] = sim.host // for the unit's placeholder workspace
		}
	}
	px := start(t, home, unitEnv(proxyEnv, proxyState), pargs...)
	pfirst := px.waitFirstLine(30 * time.Second)
	var adminURL string
	for _, f := range strings.Fields(pfirst) {
		if v, ok := strings.CutPrefix(f, "admin="); ok {
			adminURL = v
		}
	}
	// The token came from the credential file: the line names the flag,
	// never the token (it goes to the journal).
	if adminURL == "" || strings.Contains(pfirst, admin) || !strings.Contains(pfirst, "admin_token=(--admin-token-file)") {
		t.Fatalf("proxy first line %q: want admin=URL and the token file named, not the token", pfirst)
	}

	// serve, reading that proxy.
	args := unitArgs(serveStart, creds, map[string]string{"127.0.0.1:9464": "127.0.0.1:0", "http://127.0.0.1:8445": adminURL})
	p := start(t, home, unitEnv(serveEnv, state), append(args, "--refresh", "500ms")...)
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
	// Ready, and reading the proxy: dbxtop_proxy_up 1 with the
	// credential's token.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ready(url) && metricValue(t, url, read, "dbxtop_proxy_up") == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready, or not reading the proxy, within 30s\n%s", p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _ := p.signalAndWait(syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s", code, p.stderr)
	}
	if code, _ := px.signalAndWait(syscall.SIGTERM, 45*time.Second); code != 0 {
		t.Fatalf("proxy: exit %d after SIGTERM\n%s", code, px.stderr)
	}
	log := p.stderr.String()
	if !strings.Contains(log, "msg=serving") || !strings.Contains(log, "msg=stopped") {
		t.Errorf("log lacks serving or stopped:\n%s", log)
	}
	if plog := px.stderr.String(); strings.Contains(plog, "kept in memory only") {
		t.Errorf("the proxy unit's close queue is not persisted in STATE_DIRECTORY:\n%s", plog)
	}
	for _, secret := range []string{read, act, admin, sim.token} {
		if strings.Contains(log, secret) || strings.Contains(p.stdout.String(), secret) || strings.Contains(px.stderr.String(), secret) {
			t.Errorf("a secret reached serve's or the proxy's log:\n%s\n%s", log, px.stderr)
		}
	}
}

func ready(url string) bool {
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// metricValue is the value of an unlabelled-but-for-workspace series in
// serve's /metrics ("" when absent).
func metricValue(t *testing.T, url, token, name string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && strings.HasPrefix(f[0], name+"{") {
			return f[1]
		}
	}
	return ""
}
