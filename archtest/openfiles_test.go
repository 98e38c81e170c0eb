package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// openers are the calls that open a file by name: each can hang on a FIFO
// (a read or write open blocks until the other end opens) and read a
// device or an endless file.
var openers = map[string][]string{
	"os":        {"Open", "OpenFile", "ReadFile"},
	"io/ioutil": {"ReadFile"},
}

// openAllowed lists the non-test files outside internal/safefile that may
// still open a file themselves, each with why. An entry whose file no
// longer opens one fails the test: remove it.
var openAllowed = map[string]string{}

// TestFilesOpenThroughSafefile: every file a user or a unit names
// (config, state, learned limits, token files, the web configuration,
// TLS files, logs) is opened through internal/safefile: non-blocking,
// regular files only, capped. A new os.Open, os.OpenFile or os.ReadFile
// outside it fails here; use safefile.Read, Check or OpenAppend.
func TestFilesOpenThroughSafefile(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{} // file → calls
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if strings.HasPrefix(name, ".") && path != root || name == "testdata" || rel == filepath.Join("internal", "safefile") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		seen++
		calls, err := fileOpens(path)
		if err != nil {
			return err
		}
		if len(calls) > 0 {
			found[filepath.ToSlash(rel)] = calls
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Fatalf("parsed %d Go files under %s: the walk did not reach the module", seen, root)
	}
	files := make([]string, 0, len(found))
	for f := range found {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		if _, ok := openAllowed[f]; !ok {
			t.Errorf("%s: %s: open files a user names through internal/safefile (Read, Check, OpenAppend): non-blocking, regular files only, capped", f, strings.Join(found[f], ", "))
		}
	}
	for f, why := range openAllowed {
		if _, ok := found[f]; !ok {
			t.Errorf("%s (%s) no longer opens a file itself: remove it from openAllowed", f, why)
		}
	}
}

// fileOpens lists the opener calls in one Go file, as "os.Open line 12".
func fileOpens(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	names := map[string]string{} // local import name → import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := openers[p]; !ok {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	var calls []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		if p, ok := names[id.Name]; ok && slices.Contains(openers[p], sel.Sel.Name) {
			calls = append(calls, id.Name+"."+sel.Sel.Name+" line "+strconv.Itoa(fset.Position(sel.Pos()).Line))
		}
		return true
	})
	return calls, nil
}
