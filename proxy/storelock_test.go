package proxy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// stubImporter stands in for every import: the check needs only the
// package's own types (the store and its lock), so what an import would
// declare is left unknown and the errors that follow are ignored.
type stubImporter struct{}

func (stubImporter) Import(p string) (*types.Package, error) {
	name := path.Base(p)
	if strings.HasPrefix(name, "v") && strings.Trim(name[1:], "0123456789") == "" {
		name = path.Base(path.Dir(p)) // math/rand/v2
	}
	pkg := types.NewPackage(p, name)
	pkg.MarkComplete()
	return pkg, nil
}

// The store owns its lock: every use of store.mu, in the package's code
// and its tests, is in store.go, whose entry points each take it for
// their whole work (a type's methods are the only writers of its state
// and take its lock). A new caller that locks the store elsewhere fails
// here with the place to change.
func TestStoreOwnsItsLock(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "proxy" { // not the external proxy_test package
			files = append(files, f)
		}
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: stubImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check("github.com/dbxtop/dbxtop/proxy", fset, files, info)
	obj := pkg.Scope().Lookup("store")
	if obj == nil {
		t.Fatal("no type store in package proxy")
	}
	st, ok := obj.Type().Underlying().(*types.Struct)
	if !ok {
		t.Fatal("store is not a struct")
	}
	var mu *types.Var
	for i := 0; i < st.NumFields(); i++ {
		if st.Field(i).Name() == "mu" {
			mu = st.Field(i)
		}
	}
	if mu == nil {
		t.Fatal("store has no field mu: update this test to its lock")
	}
	inStore := 0
	for sel, s := range info.Selections {
		if s.Obj() != mu {
			continue
		}
		pos := fset.Position(sel.Pos())
		if filepath.Base(pos.Filename) == "store.go" {
			inStore++
			continue
		}
		t.Errorf("%s: uses the store's lock outside store.go: add an entry point there that takes it and call that", pos)
	}
	if inStore == 0 {
		t.Error("found no use of the store's lock in store.go: the check sees nothing")
	}
}
