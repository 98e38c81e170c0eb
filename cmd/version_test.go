package cmd

import (
	"os"
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

// TestManPages: one page per command, generated from the cobra commands.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if err := WriteManPages(dir); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"dbxtop.1", "dbxtop-serve.1", "dbxtop-attach.1", "dbxtop-snapshot.1", "dbxtop-proxy.1", "dbxtop-version.1"} {
		b, err := os.ReadFile(dir + "/" + page)
		if err != nil {
			t.Errorf("no %s: %v", page, err)
			continue
		}
		if !strings.Contains(string(b), ".TH \"DBXTOP\" \"1\"") {
			t.Errorf("%s is not a section-1 man page:\n%.200s", page, b)
		}
	}
	b, _ := os.ReadFile(dir + "/dbxtop-serve.1")
	if !strings.Contains(string(b), `\fB--serve-token-file\fP`) {
		t.Errorf("dbxtop-serve.1 lacks --serve-token-file")
	}
}
