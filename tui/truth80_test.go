package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// allKindsSnapshot raises every kind in model's lists at once, each both
// critical and warning (the widest count form), on top of the fixture.
func allKindsSnapshot() model.Snapshot {
	s := fixtureSnapshot()
	for i, k := range model.OperationFlagKinds() {
		for j, sev := range []model.Severity{model.SeverityCritical, model.SeverityWarning} {
			s.Operations = append(s.Operations, &model.OperationView{Operation: &model.Operation{
				StatementID: fmt.Sprintf("01ff%04d-0000-4000-8000-%012d", i, j), State: model.StateRunning,
				StartedAt: fixedNow.Add(-time.Minute)},
				Flags: []model.Flag{{Kind: k, Severity: sev, Detail: "raised by the test"}}})
		}
	}
	for i, k := range model.EndpointFlagKinds() {
		s.Endpoints = append(s.Endpoints, model.EndpointView{Endpoint: model.Endpoint{Name: fmt.Sprintf("vs-%d", i), State: "ONLINE"},
			Flags: []model.Flag{{Kind: k, Severity: model.SeverityCritical}, {Kind: k, Severity: model.SeverityWarning}}})
	}
	return s
}

// TestHeaderShowsEveryRaisedKind: with every kind raised at once, each one
// is on screen at 80×24 (full or short name) in colour, NO_COLOR and
// --ascii, and nothing is cut.
func TestHeaderShowsEveryRaisedKind(t *testing.T) {
	for _, vr := range goldenVariants {
		if vr.name == "readonly" {
			continue
		}
		t.Run(vr.name, func(t *testing.T) {
			o := testOptions()
			o.Refresh = 200 * time.Millisecond
			vr.set(&o)
			screen := ansi.Strip(runGoldenOn(t, allKindsSnapshot(), nil, o, 80, 24, nil, nil))
			lines := strings.Split(screen, "\n")
			must(t, len(lines) == 24, "%d lines", len(lines))
			var head string
			for _, l := range lines {
				if strings.HasPrefix(l, "[Operations]") {
					break
				}
				head += l + "\n"
			}
			for _, k := range append(model.OperationFlagKinds(), model.EndpointFlagKinds()...) {
				full, short := string(k), shortKind[k]
				must(t, strings.Contains(head, full+" ") || strings.Contains(head, short+" "), "%s missing from the header:\n%s", k, head)
			}
			cut := "»"
			if vr.name == "ascii" {
				cut = ">>"
			}
			for _, l := range strings.Split(head, "\n") {
				if !strings.HasPrefix(l, "dbxtop") && !strings.HasPrefix(l, "poller") {
					must(t, !strings.Contains(l, cut), "flag line cut: %s", l)
				}
			}
		})
	}
}

// TestHeaderNamesWhatItCuts: at a width where not even the compact form
// fits, the cut kinds are named after the Cut glyph.
func TestHeaderNamesWhatItCuts(t *testing.T) {
	o := testOptions()
	o.NoColor, o.Renderer = true, testRenderer(termenv.Ascii)
	m := syncModel(t, newFakeEngine(allKindsSnapshot()), o, 80, 24)
	ls := m.fitKinds([]string{"flags"}, model.OperationFlagKinds(), 40)
	must(t, len(ls) <= maxKindLines, "%d lines", len(ls))
	for _, l := range ls {
		must(t, ansi.StringWidth(l) <= 40, "too wide: %q", l)
	}
	got := strings.Join(ls, "\n")
	for _, k := range model.OperationFlagKinds() {
		must(t, strings.Contains(got, shortKind[k]), "%s neither shown nor named: %q", k, got)
	}
	must(t, strings.Contains(got, "»"), "no cut glyph: %q", got)
}

// TestBlindBannerPromisesOnlyWhatCanCome: a permanent failure (refused
// token, permission) never says it clears by itself; a passing one does.
func TestBlindBannerPromisesOnlyWhatCanCome(t *testing.T) {
	for _, tc := range []struct {
		err   model.ErrorInfo
		clear bool
	}{
		{model.ErrorInfo{Kind: model.KindPermanent, Call: "ListQueries", HTTPStatus: 401, Message: "invalid token"}, false},
		{model.ErrorInfo{Kind: model.KindPermanent, Call: "ListQueries", Message: "default auth: cannot configure default credentials"}, false},
		{model.ErrorInfo{Kind: model.KindTransport, Call: "ListQueries", Message: "dial tcp: connection refused"}, true},
	} {
		m := syncModel(t, newFakeEngine(model.Snapshot{GeneratedAt: fixedNow, Errors: []model.ErrorInfo{tc.err}}), testOptions(), 80, 24)
		screen := plain(m)
		must(t, strings.Contains(screen, "this clears once") == tc.clear, "%s: clears=%v:\n%s", tc.err.Message, tc.clear, screen)
		if !tc.clear {
			must(t, strings.Contains(strings.Join(strings.Fields(screen), " "), "will not clear until the cause above is fixed."), "%s: no 'will not clear':\n%s", tc.err.Message, screen)
			must(t, !strings.Contains(screen, "workspace: permanent"), "bare kind as the cause:\n%s", screen)
		}
	}
}

// TestFrozenIsVisible: whenever a source is down the header says since
// when the data is current and which source is down, and running rows
// stop counting down as if they were live.
func TestFrozenIsVisible(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(s *model.Snapshot, h *poller.Health)
		banner string
		aged   string // the idle cell of a running row
	}{
		{"serve", func(s *model.Snapshot, h *poller.Health) {
			s.GeneratedAt = fixedNow.Add(-2 * time.Minute)
			s.Errors = append(s.Errors, model.ErrorInfo{Kind: model.KindTransport, Call: "attach",
				Message: "cannot reach serve; showing its last snapshot: GET /api/v1/snapshot: connection refused"})
			*h = poller.Health{LastError: &model.ErrorInfo{Kind: model.KindTransport, Call: "attach", Message: "connection refused"}}
		}, "data as of 11:58:00 — serve down: GET /api/v1/snapshot: connection refused", "as of 11:58:00"},
		{"workspace", func(s *model.Snapshot, h *poller.Health) {
			h.DiscoveryFailures, h.LastDiscovery = 3, fixedNow.Add(-90*time.Second)
			s.Errors = append(s.Errors, model.ErrorInfo{Kind: model.KindTransport, Call: "ListQueries", Message: "connection refused"})
			for _, op := range s.Operations {
				if !op.LastPollOKAt.IsZero() {
					op.LastPollOKAt = fixedNow.Add(-90 * time.Second)
				}
			}
		}, "data as of 11:58:30 — workspace down: ListQueries: transport: connection refused", "as of 11:58:30"},
		{"proxy", func(s *model.Snapshot, h *poller.Health) {
			h.DiscoveryFailures, h.LastDiscovery = 1, fixedNow.Add(-30*time.Second)
			s.Errors = append(s.Errors, model.ErrorInfo{Kind: model.KindTransport, Call: "ProxyOperations", Message: "connection refused"})
		}, "data as of 11:59:30 — proxy down: ProxyOperations", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, h := fixtureSnapshot(), fixtureHealth()
			tc.set(&s, &h)
			e := newFakeEngine(s)
			e.health = h
			m := syncModel(t, e, testOptions(), 80, 24)
			screen := plain(m)
			must(t, strings.Contains(screen, tc.banner), "no banner %q:\n%s", tc.banner, screen)
			if tc.name == "serve" {
				must(t, !strings.Contains(screen, "followed 0") && strings.Contains(screen, "counters are unknown"), "zero counters shown as known:\n%s", screen)
			}
			if tc.aged != "" {
				must(t, strings.Contains(screen, tc.aged) && !strings.Contains(screen, "→1m10s"), "rows not aged (%q):\n%s", tc.aged, screen)
			}
		})
	}
	// Up again: no banner.
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	must(t, !strings.Contains(plain(m), " down"), "banner while up:\n%s", plain(m))
}

// TestLastErrorAgesFromTheLatestFailure: the same error failing again
// (another give-up) restarts its age.
func TestLastErrorAgesFromTheLatestFailure(t *testing.T) {
	now := fixedNow
	o := testOptions()
	o.Now = func() time.Time { return now }
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, o, 200, 50)
	now = now.Add(15 * time.Second)
	refresh(m)
	must(t, strings.Contains(plain(m), "last error 15s ago"), "no age:\n%s", plain(m))
	e.health.GiveUps += 6 // the same call gave up six more times
	now = now.Add(5 * time.Second)
	refresh(m)
	must(t, strings.Contains(plain(m), "last error 0s ago"), "age from the first failure:\n%s", plain(m))
}

// TestSlashFiltersInEveryListView: in every view but Help, `/` opens the
// filter prompt, which then takes every key as text: q does not quit, e
// does not export; esc closes it.
func TestSlashFiltersInEveryListView(t *testing.T) {
	for v := viewID(0); v < numViews; v++ {
		if v == viewHelp {
			continue
		}
		t.Run(viewNames[v], func(t *testing.T) {
			e := newFakeEngine(fixtureSnapshot())
			m := syncModel(t, e, testOptions(), 80, 24)
			for m.view != v {
				press(m, "tab")
			}
			refresh(m)
			press(m, "/")
			_, ok := m.current().(capturer)
			must(t, ok && m.current().(capturer).Capturing(), "/ did not open a prompt in %s", viewNames[v])
			for _, k := range []string{"q", "e", "x", "s"} {
				if cmd := press(m, k); cmd != nil {
					must(t, fmt.Sprintf("%T", cmd()) != fmt.Sprintf("%T", tea.Quit()), "%q quit from the %s prompt", k, viewNames[v])
				}
			}
			lines := strings.Split(plain(m), "\n")
			must(t, strings.HasPrefix(lines[len(lines)-2], "/qexs_"), "%s prompt line %q", viewNames[v], lines[len(lines)-2])
			must(t, len(e.Calls()) == 0, "an action ran: %v", e.Calls())
			press(m, "esc")
			must(t, !m.current().(capturer).Capturing(), "esc did not close the prompt")
			must(t, m.view == v, "left the view")
		})
	}
}

func TestClientsFilter(t *testing.T) {
	s := fixtureSnapshot()
	s.Clients = []model.ClientStats{{ClientApplication: "Databricks JDBC 2.6.36", User: "etl-bot", Statements: 9, Orphans: 2},
		{ClientApplication: "databricks-sql-go", User: "bob@example.com", Statements: 3}}
	m := syncModel(t, newFakeEngine(s), testOptions(), 80, 24)
	for m.view != viewClients {
		press(m, "tab")
	}
	refresh(m)
	press(m, "/", "b", "o", "b", "enter")
	screen := plain(m)
	must(t, strings.Contains(screen, "databricks-sql-go") && !strings.Contains(screen, "etl-bot") && strings.Contains(screen, `filter "bob"`), "filter bob:\n%s", screen)
}

// TestClientsAt80KeepsDriverVersions: at 80 columns every column header
// is whole and a long application keeps its version.
func TestClientsAt80KeepsDriverVersions(t *testing.T) {
	s := fixtureSnapshot()
	p95 := 90 * time.Second
	s.Clients = []model.ClientStats{{ClientApplication: "Databricks JDBC Driver for Spark SQL 2.6.36", User: "etl-bot", Statements: 9, Orphans: 2, P95Duration: &p95},
		{ClientApplication: "databricks-sql-go 1.6.1", User: "bob@example.com", Statements: 3}}
	m := syncModel(t, newFakeEngine(s), testOptions(), 80, 24)
	for m.view != viewClients {
		press(m, "tab")
	}
	refresh(m)
	screen := plain(m)
	for _, want := range []string{"CLIENT APPLICATION", "USER", "ORPHANS", "CANCELS", "P95", "2.6.36", "databricks-sql-go 1.6.1", "1m30s"} {
		must(t, strings.Contains(screen, want), "%q missing at 80:\n%s", want, screen)
	}
}

// TestSelectionIsPredictable: the top row is selected at start and stays
// the top row until the operator moves; an operation nobody picked never
// gets a status line; g/G are absolute even with the selected operation
// hidden by the filter; the header shows row/total.
func TestSelectionIsPredictable(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 80, 24)
	top := ids(m)[0]
	must(t, m.selected() != nil && m.selected().StatementID == top, "top row not selected at start")
	must(t, strings.Contains(plain(m), "row 1/7"), "no row/total:\n%s", plain(m))
	// The top operation goes away on its own: the new top row is selected
	// and nothing is said about the one the operator never picked.
	s := fixtureSnapshot()
	s.Operations = slices.DeleteFunc(s.Operations, func(o *model.OperationView) bool { return o.StatementID == top })
	e.setSnapshot(s)
	refresh(m)
	must(t, m.selected() != nil && m.selected().StatementID == ids(m)[0], "cursor left the top row")
	must(t, !strings.Contains(plain(m), "is gone") && !strings.Contains(plain(m), shortID(top, "…")), "status about an operation nobody picked:\n%s", plain(m))

	// Picked, then hidden by the filter: g and G go to the first and last
	// rows of what is listed, j to the row after where it was.
	e.setSnapshot(fixtureSnapshot())
	m = syncModel(t, e, testOptions(), 80, 24)
	for m.selected().StatementID != idUnclosed {
		press(m, "j")
	}
	press(m, "/", "w", "h", "-", "2", "enter")
	must(t, m.selected() == nil && m.ops.missing == hidden, "not hidden")
	must(t, strings.Contains(plain(m), "row -/"), "position while hidden:\n%s", plain(m))
	press(m, "g")
	must(t, m.ops.cursorRow == 0, "g went to row %d", m.ops.cursorRow)
	press(m, "esc", "/", "w", "h", "-", "1", "enter") // hides the wh-2 row now selected
	press(m, "G")
	must(t, m.ops.cursorRow == len(m.ops.rows)-1, "G went to row %d of %d", m.ops.cursorRow, len(m.ops.rows))
	must(t, strings.Contains(plain(m), fmt.Sprintf("row %d/%d", len(m.ops.rows), len(m.ops.rows))), "row/total at the end:\n%s", plain(m))
}

// TestSortMenuListsModelsKeys: s opens a menu of model's sort keys that
// fits 80 columns; a digit picks, esc keeps the order, S reverses.
func TestSortMenuListsModelsKeys(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	press(m, "s")
	lines := strings.Split(plain(m), "\n")
	status := lines[len(lines)-2]
	for i, k := range model.SortKeys {
		must(t, strings.Contains(status, fmt.Sprintf("%d %s", i+1, k)), "%s missing from the menu: %q", k, status)
	}
	press(m, "q") // taken by the menu, ignored
	press(m, "esc")
	must(t, m.ops.sort == model.SortSeverity && !m.ops.menu.open, "esc changed the sort")
	press(m, "s", "3")
	must(t, m.ops.sort == model.SortAge && strings.Contains(plain(m), "sort age▼") && strings.Contains(plain(m), "AGE▼"), "3 did not sort by age:\n%s", plain(m))
	press(m, "s", "down", "enter")
	must(t, m.ops.sort == model.SortInactivity, "enter picked %s", m.ops.sort)
	press(m, "S")
	must(t, strings.Contains(plain(m), "sort inactivity▲"), "S did not reverse:\n%s", plain(m))
}

// TestFleetAt80SaysWhichWorkspace: with several workspaces, at 80×24 each
// row shows its workspace and the header which one is shown after w; the
// sorted column is never the one dropped for width.
func TestFleetAt80SaysWhichWorkspace(t *testing.T) {
	m := syncModel(t, newFakeEngine(fleetSnapshot()), testOptions(), 80, 24)
	out := plain(m)
	must(t, strings.Contains(out, "WORKSPACE") && strings.Contains(out, "staging") && strings.Contains(out, "prod"), "no WORKSPACE column at 80:\n%s", out)
	must(t, strings.Contains(out, "staging DOWN"), "the down workspace is not named:\n%s", out)
	press(m, "w")
	must(t, strings.Contains(plain(m), "workspace prod  "), "after w the header does not say which:\n%s", plain(m))

	m = syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	for i, k := range model.SortKeys {
		press(m, "s", fmt.Sprint(i+1))
		head := strings.Split(plain(m), "\n")[m.headerHeight()]
		must(t, strings.Contains(head, "▼"), "sorted by %s: its column is not on screen: %q", k, head)
	}
}

// TestEndpointsAt80: ROWS/LIMIT whole and compact, an expanded last
// endpoint's indexes on screen, and PgDn never scrolls the selection
// away.
func TestEndpointsAt80(t *testing.T) {
	s := fixtureSnapshot()
	for i := range 12 { // more endpoints than fit
		s.Endpoints = append(s.Endpoints, model.EndpointView{Endpoint: model.Endpoint{Name: fmt.Sprintf("vs-extra-%02d", i), State: "ONLINE", RowLimit: 2_000_000,
			NumIndexes: 2, Indexes: []model.Index{{Name: fmt.Sprintf("main.x.idx_a%02d", i), Ready: true}, {Name: fmt.Sprintf("main.x.idx_b%02d", i), Ready: true}}},
			Rows: 1_200_000, Usage: 0.6})
	}
	m := syncModel(t, newFakeEngine(s), testOptions(), 80, 24)
	press(m, "tab")
	screen := plain(m)
	must(t, strings.Contains(screen, "ROWS/LIMIT") && strings.Contains(screen, "2.0M/2.0M") && strings.Contains(screen, "1.7M/2.0M"), "ROWS/LIMIT cut at 80:\n%s", screen)
	for range 20 {
		press(m, "pgdown")
		must(t, strings.Contains(plain(m), "❯ "), "PgDn scrolled the selection away:\n%s", plain(m))
	}
	press(m, "G", "enter")
	screen = plain(m)
	must(t, strings.Contains(screen, "❯ vs-extra-11") && strings.Contains(screen, "idx_a11") && strings.Contains(screen, "idx_b11"), "expanded last endpoint's indexes off screen:\n%s", screen)
}

func TestHelpDefinesBothCloseFailedCases(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 200, 120)
	press(m, "?")
	screen := strings.Join(strings.Fields(plain(m)), " ")
	for _, want := range []string{"dbxtop's own close", "its client's close as the proxy saw it", "clears once the operation is closed"} {
		must(t, strings.Contains(screen, want), "help does not say %q", want)
	}
}

// TestCopyTellsTheTruthUnderTmux: under every tmux set-clipboard value
// the status line claims a copy only when tmux passes programs' copies on
// (on), and otherwise says tmux drops it and how to enable it, in 80
// columns.
func TestCopyTellsTheTruthUnderTmux(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"on", ""},
		{"external", "copy id: tmux drops it (set-clipboard external); enable: set -g set-clipboard on"},
		{"off", "copy id: tmux drops it (set-clipboard off); enable: set -g set-clipboard on"},
	} {
		err := tmuxDrops(tc.value)
		if tc.want == "" {
			must(t, err == nil, "%s: %v", tc.value, err)
			continue
		}
		m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
		m.Update(copyDoneMsg{what: "id", err: err})
		lines := strings.Split(plain(m), "\n")
		must(t, lines[len(lines)-2] == tc.want, "%s: status %q\n%s", tc.value, lines[len(lines)-2], plain(m))
	}
}

func TestProxyTokenErrorBlamesTheProxy(t *testing.T) {
	e := newFakeEngine(model.Snapshot{GeneratedAt: fixedNow, Errors: []model.ErrorInfo{{Kind: model.KindPermanent, Call: "ProxyOperations", HTTPStatus: 401,
		Message: "the proxy at 127.0.0.1:7000 refused DBXTOP_PROXY_TOKEN: the admin API needs Authorization: Bearer [REDACTED]"}}})
	m := syncModel(t, e, testOptions(), 80, 24)
	screen := strings.Join(strings.Fields(plain(m)), " ")
	must(t, strings.Contains(screen, "cannot observe through the proxy: 401: the proxy refused DBXTOP_PROXY_TOKEN"), "banner:\n%s", plain(m))
	must(t, !strings.Contains(screen, "observe the workspace"), "blames the workspace:\n%s", plain(m))
}

// TestExportStatusKeepsBothFiles: at 80 columns a long export directory is
// shortened from the left; both file names stay whole.
func TestExportStatusKeepsBothFiles(t *testing.T) {
	dir := "/home/operator/incidents/2026/december/outage"
	a, b := dir+"/dbxtop-snapshot-20261202T031500Z.json", dir+"/dbxtop-incident-20261202T031500Z.md"
	got := exportStatus(a, b, 80, "…")
	must(t, ansi.StringWidth(got) <= 80, "%d cells: %q", ansi.StringWidth(got), got)
	must(t, strings.Contains(got, "dbxtop-{snapshot-20261202T031500Z.json,incident-20261202T031500Z.md}"), "a file lost: %q", got)
	got = exportStatus(dir+"/s.json", dir+"/i.md", 50, "…")
	must(t, got == "exported s.json and i.md in …/outage (mode 0600)", "%q", got)
	short := exportStatus("/tmp/x.json", "/tmp/x.md", 80, "…")
	must(t, short == "exported /tmp/x.json and /tmp/x.md (mode 0600)", "%q", short)
}
