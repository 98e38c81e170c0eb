package tui

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// Several runes in one key message (fast typing, paste, slow ssh) are as
// many presses.
func TestMultiRuneKeyIsThatManyPresses(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	start := m.ops.cursorIdx
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jjj")})
	must(t, m.ops.cursorIdx == start+3, "jjj moved to %d from %d", m.ops.cursorIdx, start)
	// A burst that opens the filter types the rest into it.
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/bob")})
	must(t, m.ops.box.active && m.ops.filter.Text == "bob", "burst /bob: active %v text %q", m.ops.box.active, m.ops.filter.Text)
}

// `/` works in every list and keys typed after it never run commands.
func TestSlashNeverFallsThrough(t *testing.T) {
	for _, tc := range []struct {
		view string
		tabs int
	}{{"Operations", 0}, {"Endpoints", 1}, {"Events", 2}} {
		e := newFakeEngine(fixtureSnapshot())
		m := syncModel(t, e, testOptions(), 80, 24)
		for _, ev := range fixtureEvents() {
			m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
		}
		for range tc.tabs {
			press(m, "tab")
		}
		press(m, "/")
		for _, k := range []string{"q", "e", "x", "tab", "?"} {
			cmd := press(m, k)
			must(t, cmd == nil, "%s: %q after / returned a command", tc.view, k)
		}
		must(t, m.current().(capturer).Capturing(), "%s: prompt closed", tc.view)
		must(t, strings.Contains(plain(m), "/qex"), "%s: typed text not shown:\n%s", tc.view, plain(m))
		must(t, len(e.Calls()) == 0, "%s: engine called %v", tc.view, e.Calls())
		press(m, "esc")
		must(t, !m.current().(capturer).Capturing(), "%s: esc did not close the prompt", tc.view)
	}
}

func TestEventsFilterByKind(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	for _, ev := range fixtureEvents() {
		m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
	}
	press(m, "tab", "tab", "/")
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("flag-raised")})
	press(m, "enter")
	got := m.evs.matching()
	must(t, len(got) == 1 && got[0].Kind == "flag-raised", "kind filter: %+v", got)
	must(t, strings.Contains(plain(m), `filter "flag-raised"`), "filter not in header:\n%s", plain(m))
}

func TestEndpointsFilter(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	press(m, "tab", "/", "a", "r", "c", "h", "i", "v", "e", "enter")
	v := m.endpoints.visible()
	must(t, len(v) == 1 && v[0].Name == "vs-archive", "filter: %d", len(v))
}

func TestHelpReturnsAndScrolls(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	press(m, "tab", "?")
	must(t, m.view == viewHelp, "? did not open help")
	screen := plain(m)
	for _, s := range []string{"home", "end", "ctrl+c", "ctrl+z"} {
		must(t, strings.Contains(screen, s) || strings.Contains(strings.Join(m.help.build(), "\n"), s), "help does not list %q", s)
	}
	must(t, strings.Contains(screen, "more lines"), "help at 80x24 does not say it scrolls:\n%s", screen)
	before := m.help.View()
	press(m, "pgdown")
	must(t, m.help.View() != before, "pgdown did not scroll help")
	press(m, "esc")
	must(t, m.view == viewEndpoints, "esc returned to %v, not Endpoints", m.view)
	press(m, "?", "?")
	must(t, m.view == viewEndpoints, "? ? returned to %v", m.view)
}

func TestCtrlZSuspends(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyCtrlZ})
	must(t, cmd != nil, "no command")
	msg := cmd()
	must(t, reflect.TypeOf(msg) == reflect.TypeOf(tea.Suspend()), "ctrl+z gave %T", msg)
}

// At 80 columns the badges, the filter and the sort are visible in every
// view, and nothing is cut in the middle of a word.
func TestHeaderKeepsWhatMattersAt80(t *testing.T) {
	o := testOptions()
	o.ReadOnly = true
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), o, 80, 24)
	press(m, "space", "/", "w", "h", "enter", "s", "2")
	for _, tabs := range []int{0, 1, 1, 1} {
		for range tabs {
			press(m, "tab")
		}
		head := strings.Join(strings.Split(plain(m), "\n")[:m.headerHeight()], "\n")
		must(t, strings.Contains(head, "READ-ONLY") && strings.Contains(head, "PAUSED"), "badges missing:\n%s", head)
		if m.view == viewOps {
			must(t, strings.Contains(head, `filter "wh"`) && strings.Contains(head, "sort state▼"), "filter/sort missing:\n%s", head)
		}
		// The same header at 200 columns has everything: at 80 every word
		// is one of its words (nothing cut mid-word; an ellipsis marks a
		// shortened value, capitals an abbreviated flag kind), and what
		// was dropped is marked with » on the line it left.
		wide := syncModel(t, newFakeEngine(fixtureSnapshot()), o, 200, 50)
		press(wide, "space", "/", "w", "h", "enter", "s", "2")
		for range m.view {
			press(wide, "tab")
		}
		full := map[string]bool{}
		for _, w := range strings.Fields(strings.Join(strings.Split(plain(wide), "\n")[:wide.headerHeight()], "\n")) {
			full[w] = true
		}
		dropped := false
		seen := map[string]bool{}
		for _, w := range strings.Fields(head) {
			seen[w] = true
			abbrev := strings.ToUpper(w) == w
			must(t, full[w] || abbrev || slices.Contains(shortViewNames[:], w) || strings.HasSuffix(w, "…") || w == "»" || w == "(!" || w == "full)" || strings.HasPrefix(w, "sort") || strings.HasPrefix(w, "state"),
				"view %d: %q at 80 columns is not a word of the full header (cut mid-word?):\n%s", m.view, w, head)
		}
		for w := range full {
			if !seen[w] && strings.ToUpper(w) != w {
				dropped = true
			}
		}
		must(t, !dropped || strings.Contains(head, "»"), "view %d: words dropped at 80 columns with no » marking it:\n%s", m.view, head)
		for _, l := range strings.Split(head, "\n") {
			must(t, ansi.StringWidth(l) <= 80, "a header line is wider than 80: %q", l)
		}
	}
}

func TestLastErrorAgesAndRecovers(t *testing.T) {
	now := fixedNow
	o := testOptions()
	o.Now = func() time.Time { return now }
	e := newFakeEngine(fixtureSnapshot())
	s := fixtureSnapshot()
	s.Errors = []model.ErrorInfo{*e.health.LastError}
	e.setSnapshot(s)
	m := syncModel(t, e, o, 200, 50)
	now = now.Add(12 * time.Second)
	refresh(m)
	must(t, strings.Contains(plain(m), "last error 12s ago: GetOperationStatus"), "no age:\n%s", plain(m))
	e.setSnapshot(fixtureSnapshot()) // the call succeeds again
	refresh(m)
	must(t, strings.Contains(plain(m), "recovered 12:00:12"), "no recovery:\n%s", plain(m))
	must(t, !strings.Contains(plain(m), "transport: transport:"), "doubled kind")
}

func TestUnreachableWorkspaceBanner(t *testing.T) {
	for _, tc := range []struct {
		err  model.ErrorInfo
		want string
	}{
		{model.ErrorInfo{Kind: model.KindPermanent, Call: "ListQueries", HTTPStatus: 401, Message: "invalid token"}, "401: the token was refused"},
		{model.ErrorInfo{Kind: model.KindTransport, Call: "ListQueries", Message: "dial tcp: lookup nope.example: no such host"}, "unknown host"},
		{model.ErrorInfo{Kind: model.KindTransport, Call: "ListQueries", Message: "dial tcp 127.0.0.1:1: connect: connection refused"}, "connection refused"},
		{model.ErrorInfo{Kind: model.KindTransport, Call: "ListQueries", Message: "tls: failed to verify certificate: x509: unknown authority"}, "TLS failure"},
	} {
		e := newFakeEngine(model.Snapshot{GeneratedAt: fixedNow, Errors: []model.ErrorInfo{tc.err}})
		m := syncModel(t, e, testOptions(), 80, 24)
		screen := plain(m)
		must(t, strings.Contains(screen, "cannot observe the workspace: "+tc.want), "banner for %q:\n%s", tc.want, screen)
		must(t, !strings.Contains(screen, "no operations on"), "still says no operations")
		if tc.err.HTTPStatus == 401 {
			must(t, strings.Contains(screen, "DATABRICKS_TOKEN"), "no hint:\n%s", screen)
		}
	}
}

func TestNoOperationsIsNotSaidBeforeTheFirstListing(t *testing.T) {
	e := newFakeEngine(model.Snapshot{GeneratedAt: fixedNow})
	e.health = poller.Health{Retries: 4}
	m := syncModel(t, e, testOptions(), 80, 24)
	must(t, strings.Contains(plain(m), "no answer from the workspace yet") && !strings.Contains(plain(m), "no operations on"), "screen:\n%s", plain(m))
	e.health = poller.Health{LastDiscovery: fixedNow}
	refresh(m)
	must(t, strings.Contains(plain(m), "no operations on the watched warehouses"), "screen:\n%s", plain(m))
}

// A workspace that answers but lists no warehouse (or none the selection
// names) says so with what to check, not "no operations"; a listing with
// a warehouse, or no listing at all, does not.
func TestEmptyWarehouseListIsSaid(t *testing.T) {
	listed := fixedNow.Add(-3 * time.Second)
	for _, tc := range []struct {
		name    string
		ws      model.Workspace
		want    []string
		wantNot string
		header  string
	}{
		{"none visible", model.Workspace{Listing: &model.WarehouseListing{At: listed}},
			[]string{"no SQL warehouses in this workspace", "Check the host", "CAN_USE", "listed at 11:59:57"}, "no operations on", "none visible"},
		{"selection matches none", model.Workspace{Warehouses: []string{"nope1", "nope2"}, Listing: &model.WarehouseListing{At: listed, Visible: 4}},
			[]string{"--warehouse nope1,nope2 matches none of the 4 SQL warehouses in this workspace", "Without --warehouse"}, "no operations on", "nope1,nope2 (none listed)"},
		{"selection matches a warehouse", model.Workspace{Warehouses: []string{"wh-1"}, Listing: &model.WarehouseListing{At: listed, Visible: 4, Matched: 1}},
			[]string{"no operations on the watched warehouses"}, "SQL warehouses", "wh-1"},
		{"not listed (yet)", model.Workspace{},
			[]string{"no operations on the watched warehouses"}, "SQL warehouses", "all visible"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range []int{80, 200} {
				tc.ws.Host = "adb-1.azuredatabricks.net" // as the engine's snapshots say
				e := newFakeEngine(model.Snapshot{GeneratedAt: fixedNow, Workspace: tc.ws})
				e.health = poller.Health{LastDiscovery: fixedNow, DiscoveryUp: true}
				m := syncModel(t, e, testOptions(), w, 24)
				// Lines wrap at 80 columns: compare with the line breaks
				// and indentation taken out.
				screen := strings.Join(strings.Fields(plain(m)), " ")
				for _, want := range tc.want {
					must(t, strings.Contains(screen, want), "%d cols: want %q in:\n%s", w, want, plain(m))
				}
				must(t, !strings.Contains(screen, tc.wantNot), "%d cols: %q in:\n%s", w, tc.wantNot, plain(m))
			}
			// The header's warehouse segment (dropped first at 80 columns).
			m := syncModel(t, newFakeEngine(model.Snapshot{GeneratedAt: fixedNow, Workspace: tc.ws}), testOptions(), 200, 24)
			head := strings.Split(plain(m), "\n")[0]
			must(t, strings.Contains(head, "warehouses "+tc.header), "header %q, want warehouses %q", head, tc.header)
		})
	}
	// Several workspaces: the merged snapshot has no single host; the
	// listings add up.
	part := func(name string) model.NamedSnapshot {
		return model.NamedSnapshot{Name: name, Up: true, Snapshot: model.Snapshot{GeneratedAt: fixedNow,
			Workspace: model.Workspace{Host: "https://" + name, Listing: &model.WarehouseListing{At: listed}}}}
	}
	fleet := model.Merge([]model.NamedSnapshot{part("prod"), part("staging")})
	fe := newFakeEngine(fleet)
	fe.health = poller.Health{LastDiscovery: fixedNow, DiscoveryUp: true}
	m := syncModel(t, fe, testOptions(), 200, 24)
	must(t, strings.Contains(plain(m), "no SQL warehouses in the watched workspaces"), "fleet:\n%s", plain(m))

	// The unreachable banner wins: a failing call is the cause to fix first.
	e := newFakeEngine(model.Snapshot{GeneratedAt: fixedNow, Workspace: model.Workspace{Listing: &model.WarehouseListing{At: listed}},
		Errors: []model.ErrorInfo{{Kind: model.KindPermanent, Call: "ListQueries", HTTPStatus: 401}}})
	m = syncModel(t, e, testOptions(), 80, 24)
	must(t, strings.Contains(plain(m), "cannot observe the workspace") && !strings.Contains(plain(m), "no SQL warehouses"), "screen:\n%s", plain(m))
}

// When dbxtop is blind on an operation, STALE leads the row and the idle
// cell says how old its evidence is.
func TestStaleIsPrimaryWhenBlind(t *testing.T) {
	s := fixtureSnapshot()
	op := s.Operations[0] // INACTIVE critical
	op.Flags = append(op.Flags, model.Flag{Kind: model.FlagStale, Severity: model.SeverityWarning, Detail: "no poll"})
	op.LastPollOKAt = fixedNow.Add(-2 * time.Minute)
	m := syncModel(t, newFakeEngine(s), testOptions(), 120, 40)
	for m.selected().StatementID != idInactive {
		press(m, "j")
	}
	press(m, "j") // the row is drawn unselected
	var row string
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.Contains(l, "01ef2c3a") {
			row = l
		}
	}
	must(t, strings.Contains(row, "▲STALE ●INACT") && strings.Contains(row, "as of 11:58:00"), "row %q", row)
}

func TestFinishedRowsCollapseAndShowDash(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	must(t, strings.Contains(plain(m), "1 finished and closed (d shows them)"), "no collapsed line:\n%s", plain(m))
	press(m, "d")
	var row string
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.Contains(l, "01ef2c41") {
			row = l
		}
	}
	must(t, row != "" && strings.Contains(row, " - "), "closed row %q", row)
	// IDLE is "-" for every terminal row, even with a known inactivity.
	op := fixtureSnapshot().Operations[2]
	op.InactiveFor = dur(time.Minute)
	must(t, idleCell(m.ctx, op) == "-", "terminal idle cell %q", idleCell(m.ctx, op))
}

func TestMouseIsOptIn(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	start := m.ops.cursorIdx
	m.Update(tea.MouseMsg{Button: tea.MouseButtonWheelDown})
	must(t, m.ops.cursorIdx == start, "wheel moved without --mouse")
	o := testOptions()
	o.Mouse = true
	m = syncModel(t, newFakeEngine(fixtureSnapshot()), o, 120, 40)
	m.Update(tea.MouseMsg{Button: tea.MouseButtonWheelDown})
	must(t, m.ops.cursorIdx == start+1, "wheel did not move")
	m.Update(tea.MouseMsg{Button: tea.MouseButtonLeft, Action: tea.MouseActionPress, Y: m.headerHeight() + 1 + 3})
	must(t, m.ops.cursorIdx == 3, "click selected %d", m.ops.cursorIdx)
}

func TestFlaggedBelowIsSaid(t *testing.T) {
	s := fixtureSnapshot()
	for i := range 40 { // many healthy young operations
		s.Operations = append(s.Operations, &model.OperationView{Operation: &model.Operation{
			StatementID: "01ff" + strings.Repeat("0", 4) + string(rune('a'+i%26)) + string(rune('a'+i/26)), State: model.StateRunning,
			StartedAt: fixedNow.Add(-time.Second)}})
	}
	m := syncModel(t, newFakeEngine(s), testOptions(), 80, 24)
	press(m, "s", "3", "S") // age ascending: youngest first, flagged rows sink
	must(t, strings.Contains(plain(m), "flagged below"), "not said:\n%s", plain(m))
}

// An operation that finishes and is closed while selected is collapsed
// with the others: the status line says so (not "hidden by the filter")
// and its open detail keeps showing it.
func TestSelectedOperationCollapsesWhenClosed(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40)
	for m.selected().StatementID != idHealthy {
		press(m, "j")
	}
	press(m, "enter")
	s := fixtureSnapshot()
	for i := range s.Operations {
		if s.Operations[i].StatementID == idHealthy {
			s.Operations[i].State = model.StateClosed
			s.Operations[i].InactiveFor, s.Operations[i].ReapedIn = nil, nil
		}
	}
	e.setSnapshot(s)
	refresh(m)
	must(t, strings.Contains(plain(m), "Operation "+idHealthy) && strings.Contains(plain(m), "CLOSED"), "detail lost the operation:\n%s", plain(m))
	press(m, "esc")
	must(t, strings.Contains(plain(m), "finished and was closed (d shows finished rows)"), "status:\n%s", plain(m))
}

// Esc then Tab in one read (a slow SSH link) reaches bubbletea as
// alt+tab: both keys count, the prompt closes and the view changes.
func TestEscThenTabInOneReadIsBoth(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	press(m, "/")
	must(t, m.current().(capturer).Capturing(), "prompt not open")
	before := m.current()
	m.Update(tea.KeyMsg{Type: tea.KeyTab, Alt: true})
	must(t, !m.ops.box.active, "esc of esc+tab did not close the prompt")
	must(t, m.current() != before, "tab of esc+tab did not switch the view")
}

// With NO_COLOR no reverse video marks the selected row, so its marker is
// a heavy one (not a hairline ›); the frame still holds no escape.
func TestNoColorSelectionIsVisible(t *testing.T) {
	o := testOptions()
	o.NoColor = true
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), o, 80, 24)
	press(m, "j")
	v := m.View()
	must(t, !strings.Contains(v, "\x1b"), "escape in a NO_COLOR frame")
	must(t, strings.Count(v, unicodeGlyphs.Cursor+" ") == 1 && unicodeGlyphs.Cursor != "›", "the selected row is not marked with a heavy %q:\n%s", unicodeGlyphs.Cursor, v)
}

// While the `/` prompt is open, q and tab are text: the footer lists the
// prompt's own keys, not "q quit".
func TestFooterWhileTypingListsThePromptKeys(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	press(m, "/")
	lines := strings.Split(plain(m), "\n")
	footer := lines[len(lines)-1]
	must(t, !strings.Contains(footer, "q/ctrl+c"), "footer still offers q while typing: %q", footer)
	for _, want := range []string{"enter keep filter", "esc clear filter", "ctrl+c quit"} {
		must(t, strings.Contains(footer, want), "footer lacks %q: %q", want, footer)
	}
	press(m, "esc")
	lines = strings.Split(plain(m), "\n")
	must(t, strings.Contains(lines[len(lines)-1], "q/ctrl+c quit"), "footer after esc: %q", lines[len(lines)-1])
}

// `?` is explained wherever it shows: in the help's legend and in the
// detail of an operation whose client activity is unknown.
func TestQuestionMarkIsExplained(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 100, 60)
	press(m, "?")
	must(t, strings.Contains(plain(m), "? means dbxtop cannot know"), "help does not explain ?:\n%s", plain(m))

	s := fixtureSnapshot()
	for _, op := range s.Operations {
		op.InactiveFor, op.ReapedIn = nil, nil
		op.State, op.Gone = model.StateRunning, false
	}
	m = syncModel(t, newFakeEngine(s), testOptions(), 100, 60)
	press(m, "enter")
	must(t, strings.Contains(plain(m), "unknown: no server API tells when the owning client last called"), "detail does not explain ?:\n%s", plain(m))
}

// `!` lands on the give-up that carries the last error, even when newer
// events of the same call sit above it.
func TestBangLandsOnTheGiveUp(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	evs := fixtureEvents()
	giveUp := evs[1]
	e.health.LastError = giveUp.Err
	m := syncModel(t, e, testOptions(), 120, 24)
	for _, ev := range evs {
		m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
	}
	for i := range 12 {
		m.Update(eventMsg{evs: []model.Event{{At: fixedNow.Add(time.Duration(i) * time.Second), Kind: model.EventFlagRaised,
			StatementID: idStale, Message: "GetOperationStatus still failing (newer)"}}, ok: true})
	}
	press(m, "!")
	var first string
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.Contains(l, "TIME") && strings.Contains(l, "KIND") {
			first = "next"
			continue
		}
		if first == "next" {
			first = l
			break
		}
	}
	must(t, strings.Contains(first, "give-up"), "first event row after ! is not the give-up: %q\n%s", first, plain(m))
}

// Attached to serve, the header shows serve's refresh, not the UI tick.
func TestAttachedHeaderShowsServesRefresh(t *testing.T) {
	o := testOptions()
	o.SourceRefresh = 5 * time.Second
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), o, 120, 24)
	head := strings.Split(plain(m), "\n")[0]
	must(t, strings.Contains(head, "refresh 5s (serve)") && !strings.Contains(head, "refresh 1s"), "header: %q", head)
}
