package poller

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ledgerBypasses lists, for one file's source, each place outside the
// methods of the ledger (and of its view cache, which defines touch) that
// keeps a view current by hand (a touch call) or reaches into the
// ledger's parts (book.ops, book.views, book.closes, book.mu) instead of
// calling its methods.
func ledgerBypasses(name, src string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		if fd, ok := n.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
			if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && (id.Name == "ledger" || id.Name == "viewCache") {
					return false // the owner's own methods
				}
			}
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if sel.Sel.Name == "touch" {
			found = append(found, fset.Position(sel.Pos()).String()+": touch")
		}
		if in, ok := sel.X.(*ast.SelectorExpr); ok && in.Sel.Name == "book" {
			switch sel.Sel.Name {
			case "ops", "views", "closes", "mu":
				found = append(found, fset.Position(sel.Pos()).String()+": book."+sel.Sel.Name)
			}
		}
		return true
	})
	return found, nil
}

// TestOnlyTheLedgerWritesTheBelief: outside the methods of the ledger
// (and of its view cache, which defines touch), no code of the package
// touches a view or reaches into the ledger's parts: the ledger's methods
// are the only writers.
func TestOnlyTheLedgerWritesTheBelief(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	scanned := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		found, err := ledgerBypasses(name, string(src))
		if err != nil {
			t.Fatal(err)
		}
		scanned++
		for _, f := range found {
			t.Errorf("%s: only the ledger's methods write what the engine believes (ledger.go)", f)
		}
	}
	if scanned < 10 {
		t.Fatalf("scanned %d files of package poller; the scan looks in the wrong place", scanned)
	}
}

// TestLedgerBypassesAreFound: the scan sees a planted touch and a
// planted reach into the ledger's store.
func TestLedgerBypassesAreFound(t *testing.T) {
	src := `package poller
func (e *Engine) planted(en *entry) {
	e.book.views.touch(en)
	_ = e.book.ops.n
	e.book.adopt(en)
}
func (l *ledger) allowed(en *entry) { l.views.touch(en) }`
	found, err := ledgerBypasses("planted.go", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"planted.go:3:2: touch", "planted.go:3:2: book.views", "planted.go:4:6: book.ops"}
	if strings.Join(found, "\n") != strings.Join(want, "\n") {
		t.Fatalf("found\n%s\nwant\n%s", strings.Join(found, "\n"), strings.Join(want, "\n"))
	}
}
