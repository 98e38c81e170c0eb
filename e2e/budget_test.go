package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every end-to-end test has a budget: what it may take on an idle
// machine. A test that needs more than defaultBudget says why in
// overBudget. The package as a whole has packageBudget; the watchdog
// (main_test.go) ends a run that passes it, naming the tests still
// running. Budgets hold a growing suite to account; they are not speed
// tests: a test fails only past budgetSlack times its budget, which
// leaves room for a loaded machine (README states what a run took idle
// and beside a CPU burner).
const (
	defaultBudget = 60 * time.Second
	packageBudget = 12 * time.Minute
)

// budgetSlack is how many times its idle budget a test, or the package,
// may take: the allowance for a loaded machine. DBXTOP_E2E_SLACK
// overrides it (a number, at least 1).
func budgetSlack() float64 {
	if f, err := strconv.ParseFloat(os.Getenv("DBXTOP_E2E_SLACK"), 64); err == nil && f >= 1 {
		return f
	}
	return 4
}

// overBudget lists the tests allowed more than defaultBudget, and why.
var overBudget = map[string]struct {
	idle time.Duration
	why  string
}{
	"TestDemoShowsEveryFlagUnattended":              {150 * time.Second, "README's promise: every flag kind of the real-time demo within 3 minutes; it ends when the last shows (≈100 s)"},
	"TestDemoActsOnlyThroughItsClients":             {120 * time.Second, "waits on the real-time demo's timeline past its first minute (EXHAUSTED at ≈65 s)"},
	"TestFaultMatrix":                               {150 * time.Second, "every fault kind follows a workspace for 35 s of real time, four at a time"},
	"TestSecretsNeverPrinted":                       {150 * time.Second, "every command, then snapshot under each fault kind, one after another, each waiting out its own --timeout"},
	"TestAlertsReachAlertmanager":                   {150 * time.Second, "a real Prometheus and Alertmanager scrape, evaluate, wait their for: and group on their own intervals"},
	"TestPrometheusOrphanAlertFiresBeforeTheReaper": {90 * time.Second, "a real Prometheus scrapes and evaluates the rule on its own intervals until the orphan alert fires"},
}

// budgetOf is test name's idle budget.
func budgetOf(name string) time.Duration {
	if b, ok := overBudget[name]; ok {
		return b.idle
	}
	return defaultBudget
}

// running is every budgeted test still running, by name, with its start:
// what the watchdog names when the package runs out of time.
var running sync.Map // string → time.Time

// budget holds t to its budget from now: call it first in every test,
// after t.Parallel (a parallel test's time starts when it resumes).
func budget(t *testing.T) {
	t.Helper()
	b, start := budgetOf(t.Name()), time.Now()
	running.Store(t.Name(), start)
	t.Cleanup(func() {
		running.Delete(t.Name())
		limit := time.Duration(float64(b) * budgetSlack())
		if el := time.Since(start); el > limit {
			t.Errorf("took %s: over its budget of %s idle × %.0f for a loaded machine (e2e/budget_test.go)",
				el.Round(time.Second), b, budgetSlack())
		}
	})
}

// stillRunning is one line per budgeted test still running: its name,
// how long it has run and its budget.
func stillRunning() string {
	var lines []string
	running.Range(func(k, v any) bool {
		name := k.(string)
		lines = append(lines, fmt.Sprintf("  %s: running for %s (budget %s idle)", name,
			time.Since(v.(time.Time)).Round(time.Second), budgetOf(name)))
		return true
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestEveryTestHasABudget: every Test function of the package starts with
// budget(t) (after t.Parallel, if any), and every entry of overBudget
// names a test of the package and says why it needs more.
func TestEveryTestHasABudget(t *testing.T) {
	budget(t)
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	tests := map[string]bool{}
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Name.Name == "TestMain" {
				continue
			}
			tests[fd.Name.Name] = true
			if !startsWithBudget(fd.Body.List) {
				t.Errorf("%s: %s does not start with budget(t) (after t.Parallel())", fset.Position(fd.Pos()), fd.Name.Name)
			}
		}
	}
	if len(tests) < 20 {
		t.Fatalf("found %d tests: the parse missed the package", len(tests))
	}
	for name, b := range overBudget {
		switch {
		case !tests[name]:
			t.Errorf("overBudget names %s, which is not a test of e2e", name)
		case b.idle <= defaultBudget || b.why == "":
			t.Errorf("overBudget %s: %s, %q: an entry is for more than %s, and says why", name, b.idle, b.why, defaultBudget)
		}
	}
}

// startsWithBudget: the first statement calls budget(t), or the first is
// t.Parallel() and the second calls budget(t).
func startsWithBudget(stmts []ast.Stmt) bool {
	call := func(s ast.Stmt) string {
		es, ok := s.(*ast.ExprStmt)
		if !ok {
			return ""
		}
		c, ok := es.X.(*ast.CallExpr)
		if !ok {
			return ""
		}
		switch f := c.Fun.(type) {
		case *ast.Ident:
			return f.Name
		case *ast.SelectorExpr:
			return f.Sel.Name
		}
		return ""
	}
	switch {
	case len(stmts) >= 1 && call(stmts[0]) == "budget":
		return true
	case len(stmts) >= 2 && call(stmts[0]) == "Parallel" && call(stmts[1]) == "budget":
		return true
	}
	return false
}
