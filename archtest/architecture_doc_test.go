package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// archDoc is docs/ARCHITECTURE.md.
func archDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tableRow is what the doc's Packages table says of name (`cmd/`): its
// row without the first cell.
func tableRow(t *testing.T, doc, name string) string {
	t.Helper()
	for _, line := range strings.Split(doc, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"+name+"` |"); ok {
			return rest
		}
	}
	t.Fatalf("docs/ARCHITECTURE.md has no row for `%s`", name)
	return ""
}

// section is the text of the doc's section whose heading starts with
// heading, up to the next heading of that level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		t.Fatalf("docs/ARCHITECTURE.md has no section %q", heading)
	}
	rest := doc[i+1:]
	level := heading[:strings.Index(heading, " ")+1]
	if j := strings.Index(rest[1:], "\n"+level); j >= 0 {
		return rest[:j+1]
	}
	return rest
}

// commandNames are the first words of every Use of a cobra.Command
// literal in cmd/'s non-test files, the root aside.
func commandNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "cmd", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if sel, ok := lit.Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Command" {
				return true
			}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if id, isID := kv.Key.(*ast.Ident); !ok || !isID || id.Name != "Use" {
					continue
				}
				if bl, ok := kv.Value.(*ast.BasicLit); ok {
					use, _ := strconv.Unquote(bl.Value)
					if name, _, _ := strings.Cut(use, " "); name != "dbxtop" {
						seen[name] = true
					}
				}
			}
			return true
		})
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// directModules are the requirements of go.mod not marked indirect.
func directModules(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inBlock := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && !strings.Contains(line, "// indirect") {
			out = append(out, f[0])
		}
	}
	return out
}

// TestArchitectureDocListsEveryCommand: the cmd/ row names every command
// and subcommand the code defines.
func TestArchitectureDocListsEveryCommand(t *testing.T) {
	row := tableRow(t, archDoc(t), "cmd/")
	names := commandNames(t)
	if len(names) < 8 {
		t.Fatalf("found only %v in cmd/: the parse missed the command tree", names)
	}
	for _, n := range names {
		if !strings.Contains(row, "`"+n+"`") {
			t.Errorf("docs/ARCHITECTURE.md's cmd/ row does not name the command `%s`", n)
		}
	}
}

// TestArchitectureDocListsEveryDoc: the docs/ row names every document
// and folder in docs/, and nothing that is gone.
func TestArchitectureDocListsEveryDoc(t *testing.T) {
	row := tableRow(t, archDoc(t), "docs/")
	entries, err := os.ReadDir(filepath.Join("..", "docs"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		have[name] = true
		if name != "ARCHITECTURE.md" && !strings.Contains(row, "`"+name+"`") {
			t.Errorf("docs/ARCHITECTURE.md's docs/ row does not name `%s`", name)
		}
	}
	for _, m := range regexp.MustCompile("`([^`]+(?:\\.md|/))`").FindAllStringSubmatch(row, -1) {
		if !have[m[1]] {
			t.Errorf("docs/ARCHITECTURE.md's docs/ row names `%s`, which docs/ does not hold", m[1])
		}
	}
}

// TestArchitectureDocListsEveryDirectModule: the Dependencies table has a
// row for every direct requirement of go.mod and names no module go.mod
// does not require directly.
func TestArchitectureDocListsEveryDirectModule(t *testing.T) {
	deps := section(t, archDoc(t), "## Dependencies")
	direct := directModules(t)
	if len(direct) < 5 {
		t.Fatalf("found only %v in go.mod", direct)
	}
	isDirect := map[string]bool{}
	for _, m := range direct {
		isDirect[m] = true
	}
	named := map[string]bool{}
	for _, line := range strings.Split(deps, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range regexp.MustCompile("`([a-z0-9.-]+\\.[a-z]+/[^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			named[m[1]] = true
			if !isDirect[m[1]] {
				t.Errorf("the Dependencies table has a row for `%s`, which go.mod does not require directly", m[1])
			}
		}
	}
	for _, m := range direct {
		if !named[m] {
			t.Errorf("go.mod requires `%s` directly, and docs/ARCHITECTURE.md's Dependencies table has no row for it (say why it is needed)", m)
		}
	}
}
