package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fuzzNotInCI are the fuzz targets .ci/fuzz leaves out, with why: none
// parses what a remote party sends.
var fuzzNotInCI = map[string]string{
	"./textfmt FuzzDurationReadsBack":                  "formats dbxtop's own durations",
	"./tui FuzzOperationsScreen":                       "the TUI's keys and layout, slow per input; the renderer's hostile text is FuzzRenderer's",
	"./tui FuzzRenderer":                               "renders text textfmt already sanitised (FuzzSanitize, in CI)",
	"./report FuzzClean":                               "report's cleaning of text textfmt already sanitised",
	"./sources/sim FuzzParseFaults":                    "the --faults flag, typed by the operator",
	"./sources/sim/conformance FuzzStripDirectResults": "a test transport of the conformance module",
}

// TestCIFuzzesEveryRemoteInputParser: .ci/fuzz names every fuzz target of
// the repository, or fuzzNotInCI says why it is left out, and names none
// that is gone; every target it names has a committed corpus.
func TestCIFuzzesEveryRemoteInputParser(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, ".ci", "fuzz"))
	if err != nil {
		t.Fatal(err)
	}
	inCI := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*"(\./\S+ Fuzz\w+)"$`).FindAllStringSubmatch(string(script), -1) {
		inCI[m[1]] = true
	}
	decl := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	found := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") && path != root || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			found["./"+filepath.ToSlash(rel)+" "+m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 15 {
		t.Fatalf("found %d fuzz targets: the walk missed the repository", len(found))
	}
	for k := range found {
		if !inCI[k] && fuzzNotInCI[k] == "" {
			t.Errorf("fuzz target %s is neither in .ci/fuzz nor in fuzzNotInCI with a reason", k)
		}
	}
	for k := range inCI {
		if !found[k] {
			t.Errorf(".ci/fuzz names %s, which is not a fuzz target of the repository", k)
			continue
		}
		pkg, name, _ := strings.Cut(k, " ")
		if entries, err := os.ReadDir(filepath.Join(root, pkg, "testdata", "fuzz", name)); err != nil || len(entries) == 0 {
			t.Errorf("%s has no committed corpus in %s/testdata/fuzz/%s", k, pkg, name)
		}
	}
	for k := range fuzzNotInCI {
		if !found[k] || inCI[k] {
			t.Errorf("fuzzNotInCI names %s, which is gone or in .ci/fuzz", k)
		}
	}
}
