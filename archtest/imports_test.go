package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/dbxtop/dbxtop"

// rule is one table row: what the package may import (nil: anything)
// and what it must never import.
type rule struct {
	allowed []string
	never   []string
}

// rules maps a table row (a package path relative to the module, "main"
// for the module root) to its rule. A row governs that package alone: a
// sub-package has a row of its own.
type rules map[string]rule

var (
	rowRE   = regexp.MustCompile("^\\|\\s*`([^`]+)`[^|]*\\|([^|]*)\\|")
	nameRE  = regexp.MustCompile("`([^`]+)`")
	neverRE = regexp.MustCompile(`(?i)\bnever\b`)
)

// parseTable reads the rows of the table under "## Allowed imports". In a
// cell, the back-quoted names before the word "never" are allowed, those
// after it forbidden ("`sources`, `model` (never `poller`)").
func parseTable(r io.Reader) (rules, error) {
	t := rules{}
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Allowed imports"
			continue
		}
		m := rowRE.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		cell := strings.TrimSpace(m[2])
		allowCell, neverCell := cell, ""
		if loc := neverRE.FindStringIndex(cell); loc != nil {
			allowCell, neverCell = cell[:loc[0]], cell[loc[1]:]
		}
		var ru rule
		if !strings.HasPrefix(allowCell, "anything") {
			ru.allowed = names(allowCell)
		}
		ru.never = names(neverCell)
		for _, n := range ru.never {
			if slices.Contains(ru.allowed, n) {
				return nil, fmt.Errorf("row %s both allows and forbids %s", m[1], n)
			}
		}
		t[m[1]] = ru
	}
	if len(t) == 0 {
		return nil, errors.New(`no "## Allowed imports" table found`)
	}
	return t, sc.Err()
}

// names lists the back-quoted names in s (never nil).
func names(s string) []string {
	out := []string{}
	for _, a := range nameRE.FindAllStringSubmatch(s, -1) {
		out = append(out, a[1])
	}
	return out
}

type pkgImports struct {
	ImportPath string
	Imports    []string
}

// violations lists every project-internal import the table does not
// allow or forbids, and every package the table does not place.
func (t rules) violations(pkgs []pkgImports) []string {
	var bad []string
	rel := func(p string) (string, bool) {
		if p == module {
			return "main", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		ru, ok := t[from]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is not placed in the table", from))
			continue
		}
		for _, imp := range p.Imports {
			to, internal := rel(imp)
			if !internal {
				continue
			}
			if _, ok := t[to]; !ok {
				bad = append(bad, fmt.Sprintf("%s imports %s, which the table does not place", from, to))
				continue
			}
			switch {
			case slices.Contains(ru.never, to):
				bad = append(bad, fmt.Sprintf("%s imports %s; the table says %s never imports %v", from, to, from, ru.never))
			case ru.allowed == nil || slices.Contains(ru.allowed, to):
			default:
				bad = append(bad, fmt.Sprintf("%s imports %s; the table allows %s only %v", from, to, from, ru.allowed))
			}
		}
	}
	return bad
}

// projectTable reads the table in docs/ARCHITECTURE.md; root is the
// module's directory.
func projectTable(t *testing.T) (root string, table rules) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err = parseTable(f)
	if err != nil {
		t.Fatal(err)
	}
	return root, table
}

// projectImports is `go list`'s import graph of the module.
func projectImports(t *testing.T, root string) []pkgImports {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []pkgImports
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkgImports
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	// A broken `go list` (or a wrong directory) must not pass as "no
	// violations": the packages every build has must be there.
	for _, want := range []string{module, module + "/model", module + "/poller", module + "/poller/retry", module + "/proxy", module + "/sources/sim"} {
		if !slices.ContainsFunc(pkgs, func(p pkgImports) bool { return p.ImportPath == want }) {
			t.Fatalf("go list did not report %s; got %d packages", want, len(pkgs))
		}
	}
	return pkgs
}

func TestImportsFollowTheArchitectureTable(t *testing.T) {
	root, table := projectTable(t)
	for _, v := range table.violations(projectImports(t, root)) {
		t.Error(v + " (see docs/ARCHITECTURE.md, Allowed imports)")
	}
}

// An import planted in the real graph against the real table fails the
// check: the simulator never imports the engine, the proxy uses the
// retry policy, not the engine, and the TUI reads the engine's health
// from model.
func TestPlantedImportsFail(t *testing.T) {
	root, table := projectTable(t)
	real := projectImports(t, root)
	for _, plant := range []struct{ from, to, want string }{
		{"sources/sim", "poller", "sources/sim imports poller; the table says sources/sim never imports"},
		{"sources/sim", "proxy", "sources/sim imports proxy; the table says sources/sim never imports"},
		{"proxy", "poller", "proxy imports poller; the table says proxy never imports"},
		{"tui", "poller", "tui imports poller; the table says tui never imports"},
	} {
		pkgs := slices.Clone(real)
		for i := range pkgs {
			if pkgs[i].ImportPath == module+"/"+plant.from {
				pkgs[i].Imports = append(slices.Clone(pkgs[i].Imports), module+"/"+plant.to)
			}
		}
		got := table.violations(pkgs)
		if len(got) != 1 || !strings.HasPrefix(got[0], plant.want) {
			t.Errorf("%s -> %s planted: violations %q, want one starting %q", plant.from, plant.to, got, plant.want)
		}
	}
}

// The checker itself catches what it is for.
func TestViolationsAreReported(t *testing.T) {
	table, err := parseTable(strings.NewReader("## Allowed imports\n\n| package | may import |\n|---|---|\n" +
		"| `model` | `textfmt` |\n| `textfmt` | — |\n| `poller` | `model` |\n| `sources/thrift` | `model` |\n| `cmd` | anything |\n" +
		"| `sources/sim` | `sources/thrift`, `model` (never `poller`, `proxy`) |\n| `e2e` | anything, never `main` |\n| `main` | `cmd` |\n\n## Next\n| `tui` | `poller` |\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := table["tui"]; ok {
		t.Fatal("a row after the table's section was read")
	}
	if sim := table["sources/sim"]; !slices.Equal(sim.allowed, []string{"sources/thrift", "model"}) || !slices.Equal(sim.never, []string{"poller", "proxy"}) {
		t.Fatalf("sources/sim row read as allowed %q, never %q", sim.allowed, sim.never)
	}
	got := table.violations([]pkgImports{
		{ImportPath: module + "/model", Imports: []string{"fmt", module + "/textfmt"}},
		{ImportPath: module + "/sources/thrift", Imports: []string{module + "/poller", module + "/sources/thrift/gen/x"}},
		{ImportPath: module + "/sources/thrift/gen/x", Imports: []string{"strings"}},
		{ImportPath: module + "/sources/sim", Imports: []string{module + "/model", module + "/poller"}},
		{ImportPath: module + "/cmd", Imports: []string{module + "/poller", module + "/tui"}},
		{ImportPath: module + "/e2e", Imports: []string{module + "/model", module}},
		{ImportPath: module + "/tui", Imports: nil},
	})
	want := []string{
		"sources/thrift imports poller; the table allows sources/thrift only [model]",
		"sources/thrift imports sources/thrift/gen/x, which the table does not place",
		"sources/thrift/gen/x is not placed in the table",
		"sources/sim imports poller; the table says sources/sim never imports [poller proxy]",
		"cmd imports tui, which the table does not place",
		"e2e imports main; the table says e2e never imports [main]",
		"tui is not placed in the table",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
	if _, err := parseTable(strings.NewReader("## Allowed imports\n| `proxy` | `poller` (never `poller`) |\n")); err == nil {
		t.Error("a row that allows and forbids the same package was accepted")
	}
}
