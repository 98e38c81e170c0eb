package targets

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dbxtop/dbxtop/internal/dnstest"
	"github.com/dbxtop/dbxtop/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func urls(ts []Target) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.URL)
	}
	return strings.Join(s, " ")
}

func TestParseRefusesWhatIsNotAProxyBase(t *testing.T) {
	for spec, want := range map[string]string{
		"127.0.0.1:8445":                "want http(s)://",
		"ftp://127.0.0.1:1":             "unknown scheme",
		"http://user:pw@127.0.0.1:8445": "credentials in the URL",
		"http://127.0.0.1":              "HOST:PORT",
		"http://127.0.0.1:8445/v1":      "no path",
		"http://127.0.0.1:0":            "1-65535",
		"http://127.0.0.1:99999":        "1-65535",
		"dns+http://proxies":            "NAME:PORT",
		"dns+http://proxies:x":          "1-65535",
		"file://":                       "file://PATH",
	} {
		if _, err := Parse(spec, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): err %v, want one saying %q", spec, err, want)
		}
		if _, err := Parse(spec, Options{}); err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("Parse(%q): the error repeats the password: %v", spec, err)
		}
	}
}

func TestStaticIsOneTarget(t *testing.T) {
	src, err := Parse("HTTP://127.0.0.1:8445/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := src.Targets(t.Context())
	if err != nil || urls(ts) != "http://127.0.0.1:8445" || ts[0].TokenFile != "" {
		t.Fatalf("targets %+v, err %v", ts, err)
	}
}

// TestDNSResolvesEveryAddressOnEachCall: a dns+http name becomes one
// target per A record, through the injected DNS server on loopback, and a
// change of its records shows on the next call; a name that stops
// resolving keeps the last list, with an error.
func TestDNSResolvesEveryAddressOnEachCall(t *testing.T) {
	srv := dnstest.Start(t, map[string][]string{"proxies.dbxtop.test": {"127.0.0.3", "127.0.0.2", "127.0.0.4"}})
	r, err := NewResolver(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	src, err := Parse("dns+http://proxies.dbxtop.test:8445", Options{Resolver: r})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := src.Targets(t.Context())
	if want := "http://127.0.0.2:8445 http://127.0.0.3:8445 http://127.0.0.4:8445"; err != nil || urls(ts) != want {
		t.Fatalf("targets %q, err %v; want %q", urls(ts), err, want)
	}
	srv.Set("proxies.dbxtop.test", "127.0.0.4", "::1")
	ts, err = src.Targets(t.Context())
	if want := "http://127.0.0.4:8445 http://[::1]:8445"; err != nil || urls(ts) != want {
		t.Fatalf("after a change: targets %q, err %v; want %q", urls(ts), err, want)
	}
	srv.Set("proxies.dbxtop.test")
	ts, err = src.Targets(t.Context())
	if want := "http://127.0.0.4:8445 http://[::1]:8445"; err == nil || urls(ts) != want || !strings.Contains(err.Error(), "proxies.dbxtop.test") {
		t.Fatalf("a name gone: targets %q, err %v; want the last list and an error naming it", urls(ts), err)
	}
}

func TestDNSHTTPSKeepsTheNameForTLS(t *testing.T) {
	srv := dnstest.Start(t, map[string][]string{"proxies.dbxtop.test": {"127.0.0.2"}})
	r, _ := NewResolver(srv.Addr())
	src, _ := Parse("dns+https://proxies.dbxtop.test:8445", Options{Resolver: r})
	ts, err := src.Targets(t.Context())
	if err != nil || urls(ts) != "https://127.0.0.2:8445" || ts[0].ServerName != "proxies.dbxtop.test" {
		t.Fatalf("targets %+v, err %v", ts, err)
	}
}

func TestNewResolverWantsAnAddress(t *testing.T) {
	for _, a := range []string{"", "localhost:53", "127.0.0.1"} {
		if _, err := NewResolver(a); err == nil {
			t.Errorf("NewResolver(%q) accepted", a)
		}
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	// Through a rename, as generators write: a new inode every time.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestFileSDIsReReadWhenItChanges: a file_sd file's groups become targets
// with their labels and token files; a rewrite shows on the next call; a
// broken rewrite keeps the last good list, with an error.
func TestFileSDIsReReadWhenItChanges(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "proxies.json")
	write(t, p, `[{"targets": ["127.0.0.2:8445", "127.0.0.3:8445"], "labels": {"host": "job-1", "__dbxtop_token_file__": "tok"}},
	 {"targets": ["https://127.0.0.4:8445"], "labels": {"__scheme__": "https", "__meta_x": "dropped"}}]`, 0o644)
	src, err := Parse("file://"+p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := src.Targets(t.Context())
	if want := "http://127.0.0.2:8445 http://127.0.0.3:8445 https://127.0.0.4:8445"; err != nil || urls(ts) != want {
		t.Fatalf("targets %q, err %v; want %q", urls(ts), err, want)
	}
	if ts[0].TokenFile != filepath.Join(dir, "tok") || ts[0].Labels["host"] != "job-1" || len(ts[0].Labels) != 1 {
		t.Errorf("first target %+v: want the token file beside the file_sd file and the label host", ts[0])
	}
	if ts[2].TokenFile != "" || ts[2].Labels != nil {
		t.Errorf("third target %+v: want no token file and no labels (__ labels are consumed)", ts[2])
	}

	write(t, p, `[{"targets": ["127.0.0.5:8445"]}]`, 0o644)
	if ts, err = src.Targets(t.Context()); err != nil || urls(ts) != "http://127.0.0.5:8445" {
		t.Fatalf("after a rewrite: targets %q, err %v", urls(ts), err)
	}
	write(t, p, `[{"targets": ["127.0.0.5:8445"`, 0o644)
	if ts, err = src.Targets(t.Context()); err == nil || urls(ts) != "http://127.0.0.5:8445" || !strings.Contains(err.Error(), "last good") {
		t.Fatalf("a half-written file: targets %q, err %v; want the last good list and an error", urls(ts), err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if ts, err = src.Targets(t.Context()); err == nil || urls(ts) != "http://127.0.0.5:8445" {
		t.Fatalf("a file gone: targets %q, err %v; want the last good list and an error", urls(ts), err)
	}
}

func TestFileSDReadsYAML(t *testing.T) {
	p := filepath.Join(t.TempDir(), "proxies.yml")
	write(t, p, "- targets: ['127.0.0.2:8445']\n  labels:\n    __dbxtop_token_file__: /run/credentials/x/token\n- targets: []\n", 0o644)
	src, _ := Parse("file://"+p, Options{})
	ts, err := src.Targets(t.Context())
	if err != nil || urls(ts) != "http://127.0.0.2:8445" || ts[0].TokenFile != "/run/credentials/x/token" {
		t.Fatalf("targets %+v, err %v", ts, err)
	}
	write(t, p, "", 0o644)
	if ts, err = src.Targets(t.Context()); err != nil || len(ts) != 0 {
		t.Fatalf("an empty file: targets %+v, err %v; want none", ts, err)
	}
}

// TestFileSDRefusesATokenInIt: file_sd files are often generated and
// world-readable: a label carrying a token is refused, and the error
// does not repeat the token.
func TestFileSDRefusesATokenInIt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "proxies.json")
	write(t, p, `[{"targets": ["127.0.0.2:8445"], "labels": {"admin_token": "s3cret-token"}}]`, 0o644)
	src, _ := Parse("file://"+p, Options{})
	ts, err := src.Targets(t.Context())
	if err == nil || len(ts) != 0 || !strings.Contains(err.Error(), LabelTokenFile) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("targets %+v, err %v; want none and an error pointing to %s without the token", ts, err, LabelTokenFile)
	}
}

func TestFileSDRefusesAFIFOWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "proxies.json")
	testenv.FIFO(t, p)
	src, _ := Parse("file://"+p, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := src.Targets(ctx); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("err %v, want a refusal naming a named pipe", err)
		}
	case <-ctx.Done():
		t.Fatal("Targets blocked on a FIFO")
	}
}

func TestSourcesAreCappedAndMerged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "proxies.json")
	write(t, p, `[{"targets": ["127.0.0.4:1", "127.0.0.3:1", "127.0.0.2:1"]}]`, 0o644)
	src, err := ParseAll([]string{"file://" + p, "http://127.0.0.2:1", "http://127.0.0.9:1"}, Options{MaxTargets: 3})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := src.Targets(t.Context())
	if want := "http://127.0.0.2:1 http://127.0.0.3:1 http://127.0.0.4:1"; urls(ts) != want || err == nil || !strings.Contains(err.Error(), "cap of 3") {
		t.Fatalf("targets %q, err %v; want %q and an error naming the cap", urls(ts), err, want)
	}
}

func TestTokenReadsTheTargetsFileWithTheUsualChecks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tok")
	write(t, p, "s3cret-token\n", 0o644)
	tok, warn, err := Target{URL: "http://127.0.0.2:1", TokenFile: p}.Token("common")
	if err != nil || tok != "s3cret-token" || !strings.Contains(warn, "chmod 600") {
		t.Fatalf("tok %q warn %q err %v; want the file's token and a permission warning", tok, warn, err)
	}
	if tok, _, err := (Target{URL: "http://127.0.0.2:1"}).Token("common"); err != nil || tok != "common" {
		t.Fatalf("no token file: tok %q err %v; want the common token", tok, err)
	}
	if _, _, err := (Target{URL: "http://127.0.0.2:1", TokenFile: filepath.Join(dir, "none")}).Token("common"); err == nil || !strings.Contains(err.Error(), LabelTokenFile) {
		t.Fatalf("a missing token file: err %v, want one naming the label", err)
	}
}
