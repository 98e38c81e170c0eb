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

// rules maps a table row (a package path relative to the module, "main"
// for the module root) to what it may import; nil means anything.
type rules map[string][]string

var rowRE = regexp.MustCompile("^\\|\\s*`([^`]+)`[^|]*\\|([^|]*)\\|")

// parseTable reads the rows of the table under "## Allowed imports".
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
		if strings.HasPrefix(cell, "anything") {
			t[m[1]] = nil
			continue
		}
		allowed := []string{}
		for _, a := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cell, -1) {
			allowed = append(allowed, a[1])
		}
		t[m[1]] = allowed
	}
	if len(t) == 0 {
		return nil, errors.New(`no "## Allowed imports" table found`)
	}
	return t, sc.Err()
}

// row is the table row that governs pkg (a path relative to the module):
// the longest row that is pkg or one of its parents, so
// sources/thrift/gen/tcliservice belongs to sources/thrift.
func (t rules) row(pkg string) (string, bool) {
	for p := pkg; ; {
		if _, ok := t[p]; ok {
			return p, true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return "", false
		}
		p = p[:i]
	}
}

type pkgImports struct {
	ImportPath string
	Imports    []string
}

// violations lists every project-internal import the table does not
// allow, and every package the table does not place.
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
		fromRow, ok := t.row(from)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is not placed in the table", from))
			continue
		}
		allowed := t[fromRow]
		for _, imp := range p.Imports {
			to, internal := rel(imp)
			if !internal {
				continue
			}
			toRow, ok := t.row(to)
			if !ok {
				bad = append(bad, fmt.Sprintf("%s imports %s, which the table does not place", from, to))
				continue
			}
			if toRow == fromRow || allowed == nil || slices.Contains(allowed, toRow) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s imports %s; the table allows %s only %v", from, to, fromRow, allowed))
		}
	}
	return bad
}

func TestImportsFollowTheArchitectureTable(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := parseTable(f)
	if err != nil {
		t.Fatal(err)
	}
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
	for _, want := range []string{module, module + "/model", module + "/poller", module + "/sources/thrift"} {
		if !slices.ContainsFunc(pkgs, func(p pkgImports) bool { return p.ImportPath == want }) {
			t.Fatalf("go list did not report %s; got %d packages", want, len(pkgs))
		}
	}
	for _, v := range table.violations(pkgs) {
		t.Error(v + " (see docs/ARCHITECTURE.md, Allowed imports)")
	}
}

// The checker itself catches what it is for.
func TestViolationsAreReported(t *testing.T) {
	table, err := parseTable(strings.NewReader("## Allowed imports\n\n| package | may import |\n|---|---|\n" +
		"| `model` | `textfmt` |\n| `textfmt` | — |\n| `poller` | `model` |\n| `sources/thrift` | `model` |\n| `cmd` | anything |\n\n## Next\n| `tui` | `poller` |\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := table["tui"]; ok {
		t.Fatal("a row after the table's section was read")
	}
	got := table.violations([]pkgImports{
		{ImportPath: module + "/model", Imports: []string{"fmt", module + "/textfmt"}},
		{ImportPath: module + "/sources/thrift", Imports: []string{module + "/poller", module + "/sources/thrift/gen/x"}},
		{ImportPath: module + "/sources/thrift/gen/x", Imports: []string{"strings"}},
		{ImportPath: module + "/cmd", Imports: []string{module + "/poller", module + "/tui"}},
		{ImportPath: module + "/tui", Imports: nil},
	})
	want := []string{
		"sources/thrift imports poller; the table allows sources/thrift only [model]",
		"cmd imports tui, which the table does not place",
		"tui is not placed in the table",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
}
