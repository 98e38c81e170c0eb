package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// skipReason is why a test may skip outside internal/testenv. The census
// allows these and nothing else: none of them applies under CI=true,
// which runs without -short on linux, runs no benchmarks, and starts no
// helper process on its own.
type skipReason string

const (
	// skipShort: `go test -short` (the quick part of the suite) leaves it
	// out; CI never passes -short (TestCINeverRunsShort).
	skipShort skipReason = "-short"
	// skipPlatform: the operating system cannot run it.
	skipPlatform skipReason = "platform"
	// skipLong: an opt-in long variant (DBXTOP_LONG=1) of a check whose
	// CI-length variant runs in CI.
	skipLong skipReason = "opt-in long run"
	// skipHelper: the test is a child process's entry point, started by
	// another test with an environment variable; run directly it has
	// nothing to do.
	skipHelper skipReason = "helper process"
)

// skipGuard is what the condition of the `if` around a skip must read
// for each reason, so an entry cannot hide a different condition.
var skipGuard = map[skipReason]string{
	skipShort:    "testing.Short()",
	skipPlatform: "runtime.GOOS",
	skipLong:     "DBXTOP_LONG",
	skipHelper:   `== ""`, // the variable that makes it a helper is unset
}

// skipsAllowed is the census: every t.Skip, Skipf and SkipNow outside
// internal/testenv, by file and function, with its reason. Everything
// else skips through internal/testenv (Tool, Missing, Long), which fails
// under CI=true instead of skipping.
var skipsAllowed = map[string]skipReason{
	"proxy/store_bench_test.go TestMemoryPerHeldOperation":        skipShort,
	"proxy/store_bench_test.go TestRecordCostFlatWithHeld":        skipShort,
	"proxy/memory_test.go TestMemoryAtTheCap":                     skipShort,
	"sources/sim/conformance/proxy_test.go TestProxyHelperDriver": skipHelper,
}

// skipCall is one skip found in a file: where, in which function, and the
// condition of the innermost `if` around it ("" when there is none).
type skipCall struct {
	key, pos, cond string
}

// findSkips lists the Skip, Skipf and SkipNow calls of one file (rel is its
// path from the repository root). Calls on an imported package (thrift's
// Skip of a field) are not test skips.
func findSkips(fset *token.FileSet, rel string, src []byte, f *ast.File) []skipCall {
	imported := map[string]bool{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imported[name] = true
	}
	var out []skipCall
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		var conds []ast.Expr
		var walk func(n ast.Node) bool
		walk = func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.IfStmt:
				if x.Init != nil {
					ast.Inspect(x.Init, walk)
				}
				ast.Inspect(x.Cond, walk)
				conds = append(conds, x.Cond)
				ast.Inspect(x.Body, walk)
				conds = conds[:len(conds)-1]
				if x.Else != nil {
					ast.Inspect(x.Else, walk)
				}
				return false
			case *ast.CallExpr:
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Skip" && sel.Sel.Name != "Skipf" && sel.Sel.Name != "SkipNow") {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && imported[id.Name] {
					return true
				}
				c := skipCall{key: rel + " " + fd.Name.Name, pos: fset.Position(x.Pos()).String()}
				if len(conds) > 0 {
					e := conds[len(conds)-1]
					c.cond = string(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
				}
				out = append(out, c)
			}
			return true
		}
		ast.Inspect(fd.Body, walk)
	}
	return out
}

// censusProblems checks the skips found against the census.
func censusProblems(found []skipCall, allowed map[string]skipReason) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range found {
		seen[c.key] = true
		reason, ok := allowed[c.key]
		switch {
		case !ok:
			out = append(out, c.pos+": a skip outside internal/testenv and not in the census: "+
				"skip through testenv (Tool, Missing, Long), which fails under CI=true, or add it to skipsAllowed with one of its reasons")
		case !strings.Contains(c.cond, skipGuard[reason]):
			out = append(out, c.pos+": skipped for "+string(reason)+", but its condition "+strconv.Quote(c.cond)+" does not read "+skipGuard[reason])
		}
	}
	for key := range allowed {
		if !seen[key] {
			out = append(out, strconv.Quote(key)+" is in the skip census but skips no more (or is gone): remove it from skipsAllowed")
		}
	}
	sort.Strings(out)
	return out
}

// TestSkipCensus: no test skips silently. Every skip outside
// internal/testenv is in skipsAllowed, for a reason that never holds in CI,
// under the condition that reason names; the conformance module is read
// too.
func TestSkipCensus(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []skipCall
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") && path != root || name == "testdata" || name == "node_modules" ||
				rel == "internal/testenv" || rel == "sources/thrift/gen" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || rel == "archtest/skips_test.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, 0)
		if err != nil {
			return err
		}
		files++
		found = append(found, findSkips(fset, rel, src, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: the walk did not reach the module", files, root)
	}
	for _, p := range censusProblems(found, skipsAllowed) {
		t.Error(p)
	}
}

// TestSkipCensusCatchesASilentSkip: the census on planted code. A bare
// skip, one under a condition other than its reason's, and a stale entry
// are reported; a -short skip in the census and a package's Skip are not.
func TestSkipCensusCatchesASilentSkip(t *testing.T) {
	src := `package x

import (
	"os"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

func TestQuiet(t *testing.T) {
	if os.Getenv("TERM") == "dumb" {
		t.Skipf("no terminal")
	}
}

func TestShort(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	_ = thrift.Skip(nil, nil, 0, 0)
}

func TestWrongGuard(t *testing.T) {
	if os.Getenv("X") == "" {
		t.SkipNow()
	}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := findSkips(fset, "x/x_test.go", []byte(src), f)
	if len(found) != 3 {
		t.Fatalf("found %d skips, want 3: %+v", len(found), found)
	}
	got := censusProblems(found, map[string]skipReason{
		"x/x_test.go TestShort":      skipShort,
		"x/x_test.go TestWrongGuard": skipPlatform,
		"x/x_test.go TestGone":       skipShort,
	})
	want := []string{"TestGone", "x_test.go:12", "x_test.go:25"}
	if len(got) != len(want) {
		t.Fatalf("problems %q, want one each for %v", got, want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("problem %d: %q, want it about %s", i, got[i], w)
		}
	}
}

// TestCINeverRunsShort: the census allows -short skips because CI runs the
// whole suite; .ci/run must never pass -short.
func TestCINeverRunsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "go test") && strings.Contains(line, "-short") {
			t.Errorf(".ci/run:%d runs go test with -short: %s", i+1, line)
		}
	}
}
