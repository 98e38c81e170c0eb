package cmd

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestStamped: the linker's stamp wins; without it `go install …@vX`
// reports vX from the build info, and a build that knows nothing says so.
func TestStamped(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}}
	for _, tc := range []struct {
		name                string
		v, c, d             string
		bi                  *debug.BuildInfo
		wantV, wantC, wantD string
	}{
		{"ldflags", "1.2.3", "def", "2026-12-01", bi, "1.2.3", "def", "2026-12-01"},
		{"go install", "", "", "", bi, "v1.4.0", "abc123", "2026-01-02T03:04:05Z"},
		{"devel", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, devVersion, "", ""},
		{"no build info", "", "", "", nil, devVersion, "", ""},
	} {
		v, c, d := stamped(tc.v, tc.c, tc.d, tc.bi)
		if v != tc.wantV || c != tc.wantC || d != tc.wantD {
			t.Errorf("%s: got %q %q %q, want %q %q %q", tc.name, v, c, d, tc.wantV, tc.wantC, tc.wantD)
		}
	}
}

// TestVersionLineWithoutVCS: a build with -buildvcs=false knows no
// commit; its line says so and still names the toolchain and platform.
func TestVersionLineWithoutVCS(t *testing.T) {
	defer func(v, c, d string) { Version, Commit, Date = v, c, d }(Version, Commit, Date)
	Version, Commit, Date = stamped("", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}})
	want := "dbxtop " + devVersion + " commit=unknown go=" + GoVersion + " platform=" + runtime.GOOS + "/" + runtime.GOARCH
	if got := versionLine(); got != want {
		t.Errorf("version line = %q, want %q", got, want)
	}
	Commit, Date = "abc123", "2026-01-02T03:04:05Z"
	if got := versionLine(); !strings.HasPrefix(got, "dbxtop "+devVersion+" commit=abc123 date=2026-01-02T03:04:05Z go=go") {
		t.Errorf("stamped version line = %q", got)
	}
}

// TestReadTokenFile: one line, trimmed; an empty, multi-line or oversized
// file is refused naming the flag and the file, never the content.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, warn, err := readTokenFile(write("ok", "  s3cret-token\n"), "--serve-token-file"); err != nil || tok != "s3cret-token" || warn != "" {
		t.Fatalf("token file: %q %q %v", tok, warn, err)
	}
	for name, content := range map[string]string{"empty": " \n", "two": "s3cret-token\nmore", "big": strings.Repeat("s3cret", 1000)} {
		_, _, err := readTokenFile(write(name, content), "--act-token-file")
		if err == nil || !strings.Contains(err.Error(), "--act-token-file: "+dir+"/"+name) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := readTokenFile(dir+"/missing", "--serve-token-file"); err == nil || !strings.Contains(err.Error(), "--serve-token-file") {
		t.Errorf("missing file: %v", err)
	}
}

// TestManPages: one page per command, generated from the cobra commands,
// each titled by its command (DBXTOP-SERVE) and dated by SOURCE_DATE_EPOCH
// (a release sets the commit's time there: reproducible pages).
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01
	if err := WriteManPages(dir); err != nil {
		t.Fatal(err)
	}
	for page, title := range map[string]string{"dbxtop.1": "DBXTOP", "dbxtop-serve.1": "DBXTOP-SERVE", "dbxtop-attach.1": "DBXTOP-ATTACH",
		"dbxtop-snapshot.1": "DBXTOP-SNAPSHOT", "dbxtop-proxy.1": "DBXTOP-PROXY", "dbxtop-version.1": "DBXTOP-VERSION"} {
		b, err := os.ReadFile(dir + "/" + page)
		if err != nil {
			t.Errorf("no %s: %v", page, err)
			continue
		}
		if want := ".TH \"" + title + "\" \"1\" \"Jan 2026\""; !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s:\n%.200s", page, want, b)
		}
	}
	b, _ := os.ReadFile(dir + "/dbxtop-serve.1")
	if !strings.Contains(string(b), `\fB--serve-token-file\fP`) {
		t.Errorf("dbxtop-serve.1 lacks --serve-token-file")
	}
}
