package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

const sample = `# dbxtop config
current_context = "prod"
refresh = "10s"

[thresholds]
inactivity_warn = "90s"
leak_after = "5m"

[ui]
view = "endpoints"
sort = "age"
columns = ["flag", "statement", "state", "sql"]

[endpoints."vs-shared"]
row_limit = 1000

[contexts.prod]
host = "https://adb-1.2.azuredatabricks.net"
profile = "prod"
warehouses = ["abc123", "def456"]
server_idle_timeout = "10m"
refresh = "20s"

[contexts.prod.endpoints."vs-shared"]
row_limit = 5000

[contexts.staging]
profile = "staging"
`

func parse(t *testing.T, doc string) *File {
	t.Helper()
	f, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func ptr[T any](v T) *T { return &v }

// TestPrecedence: flag > context > file top level > default, for every
// kind of setting, and the origin names where the value came from.
func TestPrecedence(t *testing.T) {
	f := parse(t, sample)
	cases := []struct {
		name    string
		ctx     []string
		ov      Overrides
		setting string
		want    string
		origin  string
	}{
		{"refresh: context over file", nil, Overrides{}, "refresh", "20s", "file line 22 (contexts.prod.refresh)"},
		{"refresh: flag over context", nil, Overrides{Refresh: ptr(3 * time.Second)}, "refresh", "3s", "flag --refresh"},
		{"refresh: file top level when the context is silent", []string{"staging"}, Overrides{}, "refresh", "10s", "file line 3 (refresh)"},
		{"refresh: default without a file value", nil, Overrides{}, "window", "1h0m0s", "default"},
		{"idle timeout: context", nil, Overrides{}, "server_idle_timeout", "10m0s", "file line 21 (contexts.prod.server_idle_timeout)"},
		{"idle timeout: default for staging", []string{"staging"}, Overrides{}, "server_idle_timeout", "7m10s", "default"},
		{"inactivity: file thresholds table", []string{"staging"}, Overrides{}, "inactivity_warn", "1m30s", "file line 6 (thresholds.inactivity_warn)"},
		{"inactivity: flag", []string{"staging"}, Overrides{InactivityWarn: ptr(2 * time.Second)}, "inactivity_warn", "2s", "flag --inactivity-warn"},
		{"host: context", nil, Overrides{}, "host", "https://adb-1.2.azuredatabricks.net", "file line 18 (contexts.prod.host)"},
		{"host: flag over context", nil, Overrides{Host: ptr("http://127.0.0.1:1")}, "host", "http://127.0.0.1:1", "flag --host"},
		{"warehouses: context", nil, Overrides{}, "warehouses", "abc123,def456", "file line 20 (contexts.prod.warehouses)"},
		{"warehouses: flag", nil, Overrides{Warehouses: []string{"x"}}, "warehouses", "x", "flag --warehouse"},
		{"view: file", nil, Overrides{}, "ui.view", "endpoints", "file line 10 (ui.view)"},
		{"export dir: flag", nil, Overrides{ExportDir: ptr("/tmp/x")}, "export_dir", "/tmp/x", "flag --export-dir"},
		{"export dir: default", nil, Overrides{}, "export_dir", "(current directory)", "default"},
		{"columns: file", nil, Overrides{}, "ui.columns", "flag,statement,state,sql", "file line 12 (ui.columns)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss, err := f.Resolve(tc.ctx, tc.ov)
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 {
				t.Fatalf("got %d settings, want 1", len(ss))
			}
			if got := ss[0].Value(tc.setting); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.setting, got, tc.want)
			}
			if got := ss[0].Origins[tc.setting]; got != tc.origin {
				t.Errorf("origin of %s = %q, want %q", tc.setting, got, tc.origin)
			}
		})
	}
}

func TestNoFileIsDefaults(t *testing.T) {
	ss, err := (&File{}).Resolve(nil, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	if s.Context != "" || s.Refresh != model.DefaultRefresh || s.Thresholds != model.DefaultThresholds || s.View != DefaultView || s.Sort != DefaultSort {
		t.Fatalf("defaults: %+v", s)
	}
	for _, n := range SettingNames {
		if s.Origins[n] == "" {
			t.Errorf("no origin for %s", n)
		}
	}
}

func TestSelectContexts(t *testing.T) {
	f := parse(t, sample)
	ss, err := f.Resolve([]string{"all"}, Overrides{Refresh: ptr(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 || ss[0].Context != "prod" || ss[1].Context != "staging" || ss[1].Refresh != time.Second {
		t.Fatalf("all: %+v", ss)
	}
	if _, err := f.Resolve([]string{"prod", "staging"}, Overrides{Host: ptr("https://x")}); err == nil || !strings.Contains(err.Error(), "--host names one workspace but 2 contexts") {
		t.Fatalf("--host with two contexts: %v", err)
	}
	if _, err := f.Resolve([]string{"nope"}, Overrides{}); err == nil || !strings.Contains(err.Error(), `unknown context "nope" (contexts: prod, staging)`) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := (&File{}).Resolve([]string{"all"}, Overrides{}); err == nil || !strings.Contains(err.Error(), "no config file") {
		t.Fatalf("all without file: %v", err)
	}
	ss, _ = f.Resolve([]string{"staging", "prod", "staging"}, Overrides{})
	if len(ss) != 2 || ss[0].Context != "staging" {
		t.Fatalf("duplicates: %+v", ss)
	}
}

// TestInvalid: every error names the key and its line.
func TestInvalid(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown key", "[contexts.prod]\nhost = \"https://a\"\nhots = \"x\"\n", "line 3: contexts.prod.hots: unknown key"},
		{"unknown table", "refresh = \"5s\"\n[colours]\nok = \"1\"\n", "line 2: colours: unknown key"},
		{"token refused", "[contexts.prod]\nprofile = \"p\"\ntoken = \"dapi-secret\"\n", "line 3: contexts.prod.token: credentials never go in this file"},
		{"bare number", "refresh = \"5\"\n", "line 1"},
		{"bare number says unit", "refresh = \"5\"\n", "missing unit"},
		{"too small", "\n\nrefresh = \"1ms\"\n", "line 3: refresh: must be at least 100ms"},
		{"wrong type", "refresh = 5\n", "line 1"},
		{"bad view", "[ui]\nview = \"graphs\"\n", "line 2: ui.view: \"graphs\": must be one of operations, endpoints, events, clients"},
		{"bad sort", "[ui]\nsort = \"size\"\n", "line 2: ui.sort"},
		{"bad column", "[ui]\ncolumns = [\"flag\", \"nope\"]\n", "line 2: ui.columns: \"nope\""},
		{"bad host", "[contexts.a]\nhost = \"ftp://x\"\n", "line 2: contexts.a.host"},
		{"no host nor profile", "[contexts.a]\nwarehouses = [\"w\"]\n", "line 1: contexts.a: needs host or profile"},
		{"current context unknown", "current_context = \"x\"\n", "line 1: current_context: \"x\" is not a context"},
		{"row limit", "[endpoints.\"e 1\"]\nrow_limit = 0\n", "line 2: endpoints.\"e 1\".row_limit: must be a positive"},
		{"colour", "[colors]\nwarning = \"yellowish\"\n", "line 2: colors.warning"},
		{"syntax", "refresh = \n", "line 1"},
		{"bad proxies", "[contexts.a]\nprofile = \"p\"\nproxies = [\"http://127.0.0.1:1\", \"dns+ftp://x:1\"]\n", "line 3: contexts.a.proxies: \"dns+ftp://x:1\""},
		{"reserved name", "[contexts.all]\nprofile = \"p\"\n", "contexts.all"},
		{"two errors both named", "[ui]\nview = \"x\"\nsort = \"y\"\n", "line 3: ui.sort"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.doc)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "dapi-secret") {
				t.Fatalf("error echoes a secret: %q", err)
			}
		})
	}
}

func TestEndpointRowLimit(t *testing.T) {
	f := parse(t, sample)
	for _, tc := range []struct {
		ctx, ep string
		want    int64
		ok      bool
	}{
		{"prod", "vs-shared", 5000, true},
		{"staging", "vs-shared", 1000, true},
		{"", "vs-shared", 1000, true},
		{"prod", "other", 0, false},
	} {
		got, ok := f.EndpointRowLimit(tc.ctx, tc.ep)
		if got != tc.want || ok != tc.ok {
			t.Errorf("EndpointRowLimit(%q, %q) = %d, %v; want %d, %v", tc.ctx, tc.ep, got, ok, tc.want, tc.ok)
		}
	}
	var nilFile *File
	if _, ok := nilFile.EndpointRowLimit("a", "b"); ok {
		t.Error("nil file has a limit")
	}
}

func TestPathAndLoad(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if p, _ := Path(env(map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"})); p != "/x/dbxtop/config.toml" {
		t.Errorf("XDG: %s", p)
	}
	if p, _ := Path(env(map[string]string{"XDG_CONFIG_HOME": "relative", "HOME": "/h"})); p != "/h/.config/dbxtop/config.toml" {
		t.Errorf("relative XDG must be ignored (XDG spec): %s", p)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.toml")
	if f, err := Load(missing, true); err != nil || f.Source() != "" {
		t.Errorf("optional missing file: %v", err)
	}
	if _, err := Load(missing, false); !errors.Is(err, ErrUnreadable) {
		t.Errorf("named missing file: %v", err)
	}
	if _, err := Load(dir, false); !errors.Is(err, ErrUnreadable) {
		t.Errorf("directory: %v", err)
	}
	p := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(p, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p, false)
	if err != nil || f.Source() != p || len(f.ContextNames()) != 2 {
		t.Fatalf("load: %v %+v", err, f)
	}
	if err := os.WriteFile(p, []byte("hots = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, false); err == nil || errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p+": line 1: hots") {
		t.Fatalf("invalid file: %v", err)
	}
}

func TestRowLimits(t *testing.T) {
	f := parse(t, sample)
	if got := f.RowLimits("prod"); len(got) != 1 || got["vs-shared"] != 5000 {
		t.Errorf("prod: %v", got)
	}
	if got := f.RowLimits("staging"); len(got) != 1 || got["vs-shared"] != 1000 {
		t.Errorf("staging: %v", got)
	}
	if got := (&File{}).RowLimits("x"); got != nil {
		t.Errorf("empty: %v", got)
	}
}

// TestProxies: a context's proxy and proxies add up (proxy first); every
// --proxy replaces them; config show prints the list.
func TestProxies(t *testing.T) {
	f := parse(t, `[contexts.p]
profile = "p"
proxy = "http://127.0.0.1:8445"
proxies = ["dns+http://proxies.example:8445", "file:///etc/dbxtop/proxies.json"]
[contexts.q]
profile = "q"
proxies = ["http://127.0.0.1:1", "http://127.0.0.1:2"]
`)
	ss, err := f.Resolve([]string{"p"}, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ss[0].Value("proxy"), "http://127.0.0.1:8445,dns+http://proxies.example:8445,file:///etc/dbxtop/proxies.json"; got != want {
		t.Errorf("proxy = %q, want %q", got, want)
	}
	if got := ss[0].Origins["proxy"]; got != "file line 3 (contexts.p.proxy)" {
		t.Errorf("origin %q", got)
	}
	ss, _ = f.Resolve([]string{"q"}, Overrides{})
	if len(ss[0].Proxies) != 2 || ss[0].Origins["proxy"] != "file line 7 (contexts.q.proxies)" {
		t.Errorf("proxies alone: %v from %q", ss[0].Proxies, ss[0].Origins["proxy"])
	}
	ss, _ = f.Resolve([]string{"p"}, Overrides{Proxies: []string{"http://127.0.0.1:9"}})
	if len(ss[0].Proxies) != 1 || ss[0].Origins["proxy"] != "flag --proxy" {
		t.Errorf("--proxy over the context: %v from %q", ss[0].Proxies, ss[0].Origins["proxy"])
	}
	for _, bad := range []string{"dns+http://name", "file://", "file:/x", "ftp://x:1", "dns+http://u@n:1"} {
		if CheckProxySpec(bad) == nil {
			t.Errorf("CheckProxySpec(%q) accepted", bad)
		}
	}
}
