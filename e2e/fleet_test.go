package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbxtop/dbxtop/model"
)

// TestSnapshotSeveralContextsOneDown: the built binary with a config file
// of three contexts — two simulators and one workspace that refuses
// connections — authenticated through ~/.databrickscfg profiles. The
// snapshot reports each workspace, the down one with its error, the
// others' operations tagged with their workspace, and exits 3 (it could
// not see everything) without hiding what it saw.
func TestSnapshotSeveralContextsOneDown(t *testing.T) {
	t.Parallel()
	budget(t)
	home := t.TempDir()
	a := startSim(t, home, "--seed", "3")
	b := startSim(t, home, "--seed", "9")
	dead := freeAddr(t)
	cfgDir := filepath.Join(home, ".config", "dbxtop")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	prof := fmt.Sprintf("[prod]\nhost = %s\ntoken = %s\n\n[staging]\nhost = %s\ntoken = %s\n\n[dr]\nhost = http://%s\ntoken = unused\n",
		a.host, a.token, b.host, b.token, dead)
	if err := os.WriteFile(filepath.Join(home, ".databrickscfg"), []byte(prof), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := "[contexts.prod]\nprofile = \"prod\"\n[contexts.staging]\nprofile = \"staging\"\n[contexts.dr]\nprofile = \"dr\"\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, runOpts{home: home, args: []string{"snapshot", "--json", "--context", "all", "--timeout", "20s"}})
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (one workspace could not be observed)\n%s", r.code, r)
	}
	var s model.Snapshot
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("snapshot JSON: %v\n%s", err, r)
	}
	up := map[string]bool{}
	for _, w := range s.Workspaces {
		up[w.Name] = w.Up
	}
	if len(s.Workspaces) != 3 || !up["prod"] || !up["staging"] || up["dr"] {
		t.Fatalf("workspaces: %+v", s.Workspaces)
	}
	byWS := map[string]int{}
	for _, o := range s.Operations {
		byWS[o.Workspace]++
	}
	if byWS["prod"] == 0 || byWS["staging"] == 0 || byWS["dr"] != 0 {
		t.Fatalf("operations per workspace: %v", byWS)
	}
	var drErr bool
	for _, e := range s.Errors {
		drErr = drErr || e.Workspace == "dr"
	}
	if !drErr || !strings.Contains(r.stderr, "dbxtop snapshot") {
		t.Fatalf("the down workspace's error is missing\n%s", r)
	}
	if strings.Contains(r.stdout+r.stderr, a.token) || strings.Contains(r.stdout+r.stderr, b.token) {
		t.Fatal("a token was printed")
	}
}
