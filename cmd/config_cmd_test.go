package cmd

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testConfig = `refresh = "10s"
export_dir = "/tmp/exports"
[thresholds]
leak_after = "3m"
[contexts.prod]
host = "https://adb-1.2.azuredatabricks.net"
warehouses = ["w1"]
server_idle_timeout = "10m"
[contexts.staging]
host = "https://adb-3.4.azuredatabricks.net"
refresh = "20s"
`

func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigPrecedenceOnTheCommandLine: flags > context > file > defaults,
// through the real command line.
func TestConfigPrecedenceOnTheCommandLine(t *testing.T) {
	p := writeConfig(t, testConfig)
	cases := []struct {
		name  string
		args  []string
		check func(ws WorkspaceConfig) string
	}{
		{"context values", []string{"--context", "prod"}, func(ws WorkspaceConfig) string {
			if ws.Host != "https://adb-1.2.azuredatabricks.net" || ws.Thresholds.ServerIdleTimeout != 10*time.Minute ||
				ws.Refresh != 10*time.Second || ws.Thresholds.LeakAfter != 3*time.Minute || ws.ExportDir != "/tmp/exports" || ws.Warehouses[0] != "w1" {
				return "context/file values not applied"
			}
			return ""
		}},
		{"flags win", []string{"--context", "prod", "--refresh", "1s", "--server-idle-timeout", "1m", "-w", "x", "--export-dir", "/e"}, func(ws WorkspaceConfig) string {
			if ws.Refresh != time.Second || ws.Thresholds.ServerIdleTimeout != time.Minute || ws.Warehouses[0] != "x" || ws.ExportDir != "/e" {
				return "flags did not win"
			}
			return ""
		}},
		{"context refresh over file", []string{"--context", "staging"}, func(ws WorkspaceConfig) string {
			if ws.Refresh != 20*time.Second || ws.Thresholds.ServerIdleTimeout != 430*time.Second {
				return "staging values wrong"
			}
			return ""
		}},
		{"all contexts", []string{"--context", "all"}, func(ws WorkspaceConfig) string {
			if len(ws.Resolved) != 2 || len(ws.targets()) != 2 || ws.targets()[1].ws.Refresh != 20*time.Second {
				return "all: two targets with their own settings"
			}
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHooks()
			r := h.run(t, map[string]string{"HOME": t.TempDir()}, append([]string{"--config", p}, tc.args...)...)
			if r.code != 0 || h.called != "tui" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if msg := tc.check(h.ws); msg != "" {
				t.Fatalf("%s: %+v", msg, h.ws)
			}
		})
	}
}

func TestConfigValidateExitCodes(t *testing.T) {
	good := writeConfig(t, testConfig)
	bad := writeConfig(t, testConfig+"[contexts.x]\nhost = \"https://x\"\ntoken = \"dapi-do-not-print\"\n")
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"config", "validate", "--config", good}, 0, "valid (2 contexts)", ""},
		{[]string{"config", "validate", "--config", bad}, 2, "", "line 14: contexts.x.token: credentials never go in this file"},
		{[]string{"config", "validate", "--config", filepath.Join(t.TempDir(), "missing.toml")}, 1, "", "unreadable"},
		{[]string{"config", "show", "--config", good, "--context", "staging"}, 0, "file line 11 (contexts.staging.refresh)", ""},
		{[]string{"--config", bad}, 2, "", "contexts.x.token"},
		{[]string{"--config", good, "--context", "nope"}, 2, "", `unknown context "nope" (contexts: prod, staging)`},
		{[]string{"--config", good, "--context", "all", "--host", "https://h"}, 2, "", "--host names one workspace but 2 contexts"},
	} {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			h := newHooks()
			r := h.run(t, map[string]string{"HOME": t.TempDir()}, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("%v: exit %d\nstdout %q\nstderr %q", tc.args, r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "dapi-do-not-print") {
				t.Fatal("a token from the file was printed")
			}
		})
	}
}

func TestAttachArguments(t *testing.T) {
	old := attachBody
	t.Cleanup(func() { attachBody = old })
	var got AttachConfig
	attachBody = func(_ context.Context, cfg AttachConfig, _, _ io.Writer) int { got = cfg; return 0 }
	for _, tc := range []struct {
		args   []string
		env    map[string]string
		code   int
		stderr string
	}{
		{[]string{"attach"}, nil, 2, "one argument: the serve URL"},
		{[]string{"attach", "ftp://x"}, map[string]string{"DBXTOP_SERVE_TOKEN": "t"}, 2, "invalid serve URL"},
		{[]string{"attach", "http://127.0.0.1:9464"}, nil, 2, "DBXTOP_SERVE_TOKEN is not set"},
		{[]string{"attach", "http://10.1.2.3:9464"}, map[string]string{"DBXTOP_SERVE_TOKEN": "t"}, 2,
			"refusing plain HTTP to 10.1.2.3:9464: it is not loopback and the serve token would cross the network in clear; use https:// (serve --tls-cert/--tls-key) or --insecure"},
		{[]string{"attach", "http://serve.example:9464"}, map[string]string{"DBXTOP_SERVE_TOKEN": "t"}, 2, "refusing plain HTTP"},
		{[]string{"attach", "--insecure", "http://10.1.2.3:9464"}, map[string]string{"DBXTOP_SERVE_TOKEN": "t"}, 0, ""},
		{[]string{"attach", "https://serve.example:9464"}, map[string]string{"DBXTOP_SERVE_TOKEN": "t"}, 0, ""},
		{[]string{"attach", "http://localhost:9464"}, map[string]string{"DBXTOP_SERVE_TOKEN": "t"}, 0, ""},
		{[]string{"attach", "http://127.0.0.1:9464"}, map[string]string{"DBXTOP_SERVE_TOKEN": " secret-tok "}, 0, ""},
	} {
		r := runCLI(t, tc.env, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, r.code, r.stderr)
		}
	}
	if got.URL != "http://127.0.0.1:9464" || got.Token != "secret-tok" {
		t.Fatalf("attach config: %+v", got)
	}
}

// A config others may write still loads, with one warning line naming the
// fix, on every command that reads it.
func TestConfigWritableByOthersWarnsOnce(t *testing.T) {
	p := writeConfig(t, testConfig)
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"config", "validate", "--config", p}, {"--config", p, "--context", "prod"}} {
		h := newHooks()
		r := h.run(t, map[string]string{"HOME": t.TempDir()}, args...)
		want := "dbxtop: warning: config file " + p + " is writable by others (mode 0666)"
		if r.code != 0 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, "chmod go-w "+p) {
			t.Errorf("%v: exit %d, stderr %q, want one line starting %q", args, r.code, r.stderr, want)
		}
	}
}

// serve refuses plain HTTP off loopback before it watches anything.
func TestServeRefusesPlainHTTPOffLoopback(t *testing.T) {
	r := runCLI(t, map[string]string{"DATABRICKS_TOKEN": "t"}, "serve", "--host", "https://adb-1.azuredatabricks.net", "--listen", "0.0.0.0:9464")
	want := `dbxtop: invalid --listen "0.0.0.0:9464": is not loopback: the serve token would cross the network in clear; add --tls-cert/--tls-key (or --insecure-listen)`
	if r.code != 2 || strings.TrimSpace(r.stderr) != want {
		t.Fatalf("exit %d, stderr %q, want 2 and %q", r.code, r.stderr, want)
	}
}
