package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a hand-written function, counted from `func` to its
// closing brace: past it, a function no longer reads in one screen and
// its steps deserve names of their own.
const maxFuncLines = 80

// longFuncAllowed lists the functions allowed to be longer than
// maxFuncLines, as "path name" (slash-separated, relative to the module).
// It is empty and should stay so: an entry that is short again fails the
// test until removed.
var longFuncAllowed = map[string]bool{}

// longFunc is one function over maxFuncLines.
type longFunc struct {
	key   string // "path name", as in longFuncAllowed
	line  int
	lines int
}

// longFuncs lists the functions of one parsed file longer than limit lines.
// Methods are named Recv.Name.
func longFuncs(fset *token.FileSet, rel string, f *ast.File, limit int) []longFunc {
	var out []longFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		first, last := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		if n := last - first + 1; n > limit {
			out = append(out, longFunc{key: rel + " " + funcName(fd), line: first, lines: n})
		}
	}
	return out
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // a generic receiver, T[P]
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestNoFunctionLongerThan80Lines: every hand-written non-test function
// of the module (generated code and sources/thrift/gen aside) is at most
// maxFuncLines long, so a newcomer can read each in one go.
func TestNoFunctionLongerThan80Lines(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	long := map[string]longFunc{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") && path != root || name == "testdata" || rel == "sources/thrift/gen" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		seen++
		for _, lf := range longFuncs(fset, rel, f, maxFuncLines) {
			long[lf.key] = lf
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Fatalf("read %d Go files under %s: the walk did not reach the module", seen, root)
	}
	for key, lf := range long {
		if !longFuncAllowed[key] {
			path, name, _ := strings.Cut(key, " ")
			t.Errorf("%s:%d: %s is %d lines, over %d: split it into named steps", path, lf.line, name, lf.lines, maxFuncLines)
		}
	}
	for key := range longFuncAllowed {
		if _, ok := long[key]; !ok {
			t.Errorf("%q is allowed to be long but is not (or is gone): remove it from longFuncAllowed", key)
		}
	}
}

// TestLongFuncsCountsFromFuncToBrace: the check's boundary, on a planted
// file: 80 lines pass, 81 do not, methods are named with their receiver.
func TestLongFuncsCountsFromFuncToBrace(t *testing.T) {
	body := func(name string, lines int) string {
		// `func` line + (lines-2) statements + closing brace.
		return name + " {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	src := "package p\n\ntype T struct{}\n\n" +
		"// fits is exactly at the bound.\n" + body("func fits()", maxFuncLines) +
		body("func over()", maxFuncLines+1) +
		body("func (t *T) method()", maxFuncLines+5)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, lf := range longFuncs(fset, "p/p.go", f, maxFuncLines) {
		got = append(got, fmt.Sprintf("%s %d", lf.key, lf.lines))
	}
	want := []string{"p/p.go over 81", "p/p.go T.method 85"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("long functions: got %q, want %q", got, want)
	}
}
