package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// flagNames lists the long flags a --help text shows.
func flagNames(help string) map[string]bool {
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9.-]+)`).FindAllStringSubmatch(help, -1) {
		names[m[1]] = true
	}
	return names
}

// TestHelpListsOnlyTheFlagsACommandUses: every command's --help shows
// the flags it acts on and no others, and no placeholder words.
func TestHelpListsOnlyTheFlagsACommandUses(t *testing.T) {
	cases := []struct {
		cmd          []string
		want, refuse []string
	}{
		{nil, []string{"mouse", "export-dir", "read-only", "ascii", "no-color", "proxy", "context"}, nil},
		{[]string{"snapshot"}, []string{"output", "json", "ascii", "no-color", "wide", "interval"}, []string{"mouse", "export-dir", "read-only"}},
		{[]string{"serve"}, []string{"read-only", "listen", "window"}, []string{"mouse", "export-dir", "ascii", "no-color"}},
		{[]string{"demo"}, []string{"mouse", "export-dir", "scenario"}, []string{"config", "context", "host", "proxy"}},
		{[]string{"config", "show"}, []string{"output", "context", "config"}, nil},
		{[]string{"config", "get-contexts"}, []string{"output", "config"}, nil},
	}
	for _, tc := range cases {
		name := strings.Join(tc.cmd, " ")
		r := runCLI(t, nil, append(tc.cmd, "--help")...)
		if r.code != 0 {
			t.Fatalf("%q --help: exit %d %q", name, r.code, r.stderr)
		}
		got := flagNames(r.stdout)
		for _, f := range tc.want {
			if !got[f] {
				t.Errorf("dbxtop %s --help lacks --%s", name, f)
			}
		}
		for _, f := range tc.refuse {
			if got[f] {
				t.Errorf("dbxtop %s --help lists --%s, which it does not use", name, f)
			}
		}
		// Placeholders: pflag reads a back-quoted word as the argument's
		// name, a zero default is printed as "(default 0s)", and a
		// StringArray's type shows as "stringArray".
		for _, bad := range []string{"--proxy dbxtop", "(default 0s)", "stringArray"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("dbxtop %s --help shows the placeholder %q", name, bad)
			}
		}
		if m := regexp.MustCompile(`\(default[^)]*\) \(default`).FindString(r.stdout); m != "" {
			t.Errorf("dbxtop %s --help gives a default twice: %q", name, m)
		}
	}
}

// TestTUIFlagsAreRefusedWhereUnused: a TUI-only flag given to snapshot or
// serve is an error, never silently ignored.
func TestTUIFlagsAreRefusedWhereUnused(t *testing.T) {
	for _, args := range [][]string{{"snapshot", "--mouse"}, {"snapshot", "--export-dir", "/tmp"}, {"serve", "--mouse"}, {"serve", "--ascii"}} {
		r := runCLI(t, nil, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "unknown flag") {
			t.Errorf("%v: exit %d stderr %q, want an unknown-flag refusal", args, r.code, r.stderr)
		}
	}
}

func TestSnapshotOutputFlag(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		output string
		stderr string
	}{
		// The hooks' snapshot body returns 1.
		{[]string{"snapshot"}, 1, "table", ""},
		{[]string{"snapshot", "-o", "json"}, 1, "json", ""},
		{[]string{"snapshot", "--json"}, 1, "json", ""},
		{[]string{"snapshot", "--output", "yaml"}, 1, "yaml", ""},
		{[]string{"snapshot", "--json", "-o", "yaml"}, 3, "", "--json is -o json"},
		{[]string{"snapshot", "--watch", "-o", "table"}, 3, "", "--watch prints JSON lines"},
		{[]string{"snapshot", "-o", "xml"}, 3, "", "must be one of table, json, yaml"},
	} {
		h := newHooks()
		r := h.run(t, map[string]string{"HOME": t.TempDir()}, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Fatalf("%v: exit %d stderr %q", tc.args, r.code, r.stderr)
		}
		if tc.code == 1 && (h.snap.Output != tc.output || h.snap.JSON != (tc.output == "json")) {
			t.Errorf("%v: output %q json %v, want %q", tc.args, h.snap.Output, h.snap.JSON, tc.output)
		}
	}
}

// TestConfigValidateWithoutAFile: the default file is optional, so its
// absence is valid; a file named with --config must exist.
func TestConfigValidateWithoutAFile(t *testing.T) {
	home := t.TempDir()
	r := runCLI(t, map[string]string{"HOME": home}, "config", "validate")
	if r.code != 0 || !strings.Contains(r.stdout, "no config file (optional") {
		t.Fatalf("validate without a file: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, map[string]string{"HOME": home}, "config", "validate", "--config", filepath.Join(home, "nope.toml"))
	if r.code != 1 {
		t.Fatalf("validate of a named missing file: exit %d, want 1", r.code)
	}
}

// TestContextBeforeConfigShow: --context given before the subcommand
// selects what config show prints.
func TestContextBeforeConfigShow(t *testing.T) {
	p := writeConfig(t, testConfig)
	r := runCLI(t, map[string]string{"HOME": t.TempDir()}, "--context", "all", "config", "show", "--config", p)
	if r.code != 0 || strings.Count(r.stdout, "SETTING") != 2 || !strings.Contains(r.stdout, "staging") {
		t.Fatalf("--context all config show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, map[string]string{"HOME": t.TempDir()}, "--context", "prod", "config", "show", "--config", p)
	if r.code != 0 || strings.Count(r.stdout, "SETTING") != 1 || strings.Contains(r.stdout, "staging") {
		t.Fatalf("--context prod config show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestConfigGetAndUseContext(t *testing.T) {
	doc := "# the team's contexts\n" + testConfig
	p := writeConfig(t, doc)
	env := map[string]string{"HOME": t.TempDir()}
	r := runCLI(t, env, "config", "get-contexts", "--config", p)
	if r.code != 0 || !strings.Contains(r.stdout, "CURRENT") || strings.Contains(r.stdout, "*") ||
		!strings.Contains(r.stdout, "prod") || !strings.Contains(r.stdout, "staging") {
		t.Fatalf("get-contexts: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, env, "config", "use-context", "staging", "--config", p)
	if r.code != 0 {
		t.Fatalf("use-context: exit %d %s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(b), "# the team's contexts\n") || !strings.Contains(string(b), `current_context = "staging"`) {
		t.Fatalf("use-context lost the comment or did not write the line:\n%s", b)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("use-context changed the file's mode to %v", st.Mode().Perm())
	}
	// Again: the line is replaced, not added twice.
	if r = runCLI(t, env, "config", "use-context", "prod", "--config", p); r.code != 0 {
		t.Fatalf("use-context again: exit %d %s", r.code, r.stderr)
	}
	b, _ = os.ReadFile(p)
	if strings.Count(string(b), "current_context") != 1 || !strings.Contains(string(b), `current_context = "prod"`) {
		t.Fatalf("second use-context:\n%s", b)
	}
	// The TUI now uses it without --context.
	h := newHooks()
	if r = h.run(t, env, "--config", p); r.code != 0 || h.ws.Host != "https://adb-1.2.azuredatabricks.net" {
		t.Fatalf("current_context not used: exit %d host %q", r.code, h.ws.Host)
	}
	var rows []contextRow
	r = runCLI(t, env, "config", "get-contexts", "--config", p, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 2 || !rows[0].Current || rows[0].Name != "prod" {
		t.Fatalf("get-contexts -o json: %v %q", err, r.stdout)
	}
	var yrows []map[string]any
	r = runCLI(t, env, "config", "get-contexts", "--config", p, "-o", "yaml")
	if err := yaml.Unmarshal([]byte(r.stdout), &yrows); err != nil || len(yrows) != 2 || yrows[1]["name"] != "staging" {
		t.Fatalf("get-contexts -o yaml: %v %q", err, r.stdout)
	}
	// An unknown context is refused and the file is left alone.
	before, _ := os.ReadFile(p)
	if r = runCLI(t, env, "config", "use-context", "nope", "--config", p); r.code != 2 || !strings.Contains(r.stderr, `no context "nope"`) {
		t.Fatalf("use-context nope: exit %d %q", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Fatal("a refused use-context changed the file")
	}
}

func TestConfigShowOutputFormats(t *testing.T) {
	p := writeConfig(t, testConfig)
	env := map[string]string{"HOME": t.TempDir()}
	var out []contextSettings
	r := runCLI(t, env, "config", "show", "--config", p, "--context", "staging", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out) != 1 || out[0].Context != "staging" {
		t.Fatalf("config show -o json: %v %q", err, r.stdout)
	}
	found := false
	for _, s := range out[0].Settings {
		if s.Setting == "refresh" && s.Value == "20s" && strings.Contains(s.From, "contexts.staging.refresh") {
			found = true
		}
	}
	if !found {
		t.Fatalf("refresh of staging missing: %+v", out[0].Settings)
	}
	r = runCLI(t, env, "config", "show", "--config", p, "-o", "yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "setting: refresh") {
		t.Fatalf("config show -o yaml: exit %d %q", r.code, r.stdout)
	}
}
