package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyTargetsTokens: a file_sd target's token file is its token; a
// target without one gets DBXTOP_PROXY_TOKEN's, or is listed with why it
// cannot be read; admin URLs are the static ones (Vector Search).
func TestProxyTargetsTokens(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.token"), []byte("file-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sd := `[{"targets": ["127.0.0.2:8445"], "labels": {"__dbxtop_token_file__": "a.token"}}, {"targets": ["127.0.0.3:8445"]}]`
	if err := os.WriteFile(filepath.Join(dir, "p.json"), []byte(sd), 0o644); err != nil {
		t.Fatal(err)
	}
	specs := []string{"file://" + filepath.Join(dir, "p.json"), "http://127.0.0.1:9470"}
	for _, common := range []string{"", "common-token-0123456789"} {
		src, static, err := proxyTargets(specs, common, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if common != "" && (len(static) != 1 || static[0].URL != "http://127.0.0.1:9470") || common == "" && len(static) != 0 {
			t.Errorf("static %+v", static)
		}
		ts, err := src.Targets(context.Background())
		if err != nil || len(ts) != 3 {
			t.Fatalf("targets %+v: %v", ts, err)
		}
		for _, tg := range ts {
			switch {
			case strings.Contains(tg.URL, "127.0.0.2"):
				if tg.Token != "file-token-0123456789" || tg.Err != nil {
					t.Errorf("the target with a token file: %+v", tg)
				}
			case common == "":
				if tg.Err == nil || !strings.Contains(tg.Err.Error(), "DBXTOP_PROXY_TOKEN") {
					t.Errorf("no token at all: %+v", tg)
				}
			case tg.Token != common || tg.Err != nil:
				t.Errorf("the common token: %+v", tg)
			}
		}
	}
	if _, _, err := proxyTargets([]string{"dns+http://n:1"}, "x", "not-an-address", nil); err == nil {
		t.Error("a bad --dns-server accepted")
	}
}
