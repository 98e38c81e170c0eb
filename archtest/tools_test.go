package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolsGoThroughTestenv: a test needing a program outside Go asks
// internal/testenv for it, the one place that skips on a machine with Go
// alone and fails under CI=true. A test's own exec.LookPath would decide
// that again, differently (a skip in CI, or a failure on a fresh clone).
func TestToolsGoThroughTestenv(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") && path != root || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if filepath.Dir(rel) == filepath.Join("internal", "testenv") || rel == filepath.Join("archtest", "tools_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		seen++
		if strings.Contains(string(b), "exec.LookPath(") {
			t.Errorf("%s calls exec.LookPath: use testenv.Tool (internal/testenv) so a missing tool skips on a fresh machine and fails under CI=true", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 10 {
		t.Fatalf("read %d test files under %s: the walk did not reach the module", seen, root)
	}
}
