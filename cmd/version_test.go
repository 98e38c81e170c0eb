package cmd

import (
	"runtime/debug"
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
