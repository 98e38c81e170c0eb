package tui

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
)

// manySnapshot is the fixture with n more live operations and done ones
// that collapse into the "+N finished and closed" line.
func manySnapshot(n, done int) model.Snapshot {
	s := fixtureSnapshot()
	for i := range n {
		s.Operations = append(s.Operations, &model.OperationView{Operation: &model.Operation{
			StatementID: fmt.Sprintf("02aa%04d-0000-4000-8000-000000000000", i), WarehouseID: "wh-3", User: "ivan@example.com",
			State: model.StateRunning, StartedAt: fixedNow.Add(-time.Duration(i+1) * time.Second), SQL: "SELECT 1"}})
	}
	for i := range done {
		s.Operations = append(s.Operations, &model.OperationView{Operation: &model.Operation{
			StatementID: fmt.Sprintf("03bb%04d-0000-4000-8000-000000000000", i), WarehouseID: "wh-3", User: "judy@example.com",
			State: model.StateClosed, StartedAt: fixedNow.Add(-time.Hour), CompletedAt: fixedNow.Add(-59 * time.Minute),
			SQL: "SELECT 2", Close: model.CloseInfo{State: model.CloseClosed, Attempts: 1}}})
	}
	return s
}

// cursorLine is the screen line marked with the cursor glyph, "" when
// no line is.
func cursorLine(m *Model) string {
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.HasPrefix(l, m.ctx.glyphs.Cursor+" ") {
			return l
		}
	}
	return ""
}

// checkCursorDrawn: whenever an operation is selected, its row is on
// screen with the cursor glyph.
func checkCursorDrawn(t *testing.T, m *Model, what string) {
	t.Helper()
	op := m.selected()
	if op == nil {
		must(t, cursorLine(m) == "", "%s: no operation selected but a row is marked:\n%s", what, plain(m))
		return
	}
	l := cursorLine(m)
	must(t, strings.Contains(l, shortID(op.StatementID, m.ctx.glyphs.Ellipsis)),
		"%s: selected %s is not the marked row %q:\n%s", what, op.StatementID, l, plain(m))
}

// Defect: G selected the last row while the "+N finished and closed"
// line took its place, so c named an operation nowhere on screen.
func TestBottomThenCloseNamesAVisibleRow(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {80, 23}, {120, 40}} {
		e := newFakeEngine(manySnapshot(40, 5))
		m := syncModel(t, e, testOptions(), sz[0], sz[1])
		press(m, "G")
		checkCursorDrawn(t, m, fmt.Sprintf("%v G", sz))
		must(t, strings.Contains(plain(m), "finished and closed (d shows them)"), "%v: the collapsed line is not shown at the bottom:\n%s", sz, plain(m))
		press(m, "c")
		must(t, m.confirm != nil, "%v: c opened no dialog", sz)
		sid := shortID(m.confirm.id, m.ctx.glyphs.Ellipsis)
		must(t, strings.Contains(cursorLine(m), sid), "%v: dialog names %s, not the marked row %q:\n%s", sz, sid, cursorLine(m), plain(m))
	}
}

// The cursor is on a drawn row after every kind of move, filter and
// resize.
func TestCursorIsAlwaysOnADrawnRow(t *testing.T) {
	e := newFakeEngine(manySnapshot(60, 7))
	m := syncModel(t, e, testOptions(), 80, 24)
	steps := [][]string{{"G"}, {"g"}, {"pgdown"}, {"pgdown"}, {"G"}, {"k"}, {"j"}, {"pgup"}, {"d"}, {"G"}, {"d"}, {"f"}, {"G"}, {"f"}, {"G"}}
	for i, s := range steps {
		press(m, s...)
		checkCursorDrawn(t, m, fmt.Sprintf("step %d %v", i, s))
		for _, sz := range [][2]int{{80, 23}, {100, 30}, {80, 24}} {
			m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
			checkCursorDrawn(t, m, fmt.Sprintf("step %d %v resized %v", i, s, sz))
		}
		refresh(m)
		checkCursorDrawn(t, m, fmt.Sprintf("step %d %v refreshed", i, s))
	}
	_ = ansi.Strip
}

// Every view renders at 80×23 (an 80×24 tmux window) and at 60×20, the
// smallest size: exactly the terminal's lines, none wider than it, with
// the header, the view's body and the footer.
func TestEveryViewFitsSmallTerminals(t *testing.T) {
	for _, sz := range [][2]int{{80, 23}, {60, 20}} {
		m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), sz[0], sz[1])
		for _, ev := range fixtureEvents() {
			m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
		}
		for v := viewOps; v < numViews; v++ {
			m.view = v
			m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
			screen := plain(m)
			if testing.Verbose() {
				t.Logf("%v %s:\n%s", sz, viewNames[v], screen)
			}
			lines := strings.Split(m.View(), "\n")
			must(t, len(lines) == sz[1], "%v %s: %d lines", sz, viewNames[v], len(lines))
			for _, l := range lines {
				must(t, ansi.StringWidth(l) <= sz[0], "%v %s: line wider than the terminal: %q", sz, viewNames[v], ansi.Strip(l))
			}
			must(t, strings.HasPrefix(screen, "dbxtop") && strings.Contains(lines[len(lines)-1], "quit"),
				"%v %s: header or footer missing:\n%s", sz, viewNames[v], screen)
		}
	}
}

// promptOf is the open dialog's text on one line.
func promptOf(m *Model) string {
	h, e := m.prompt(m.confirm, 1000)
	return strings.Join(append(h, e), " ")
}

// finishOp returns the fixture with the operation id finished (still
// open: UNCLOSED-looking).
func finishOp(id string) model.Snapshot {
	s := fixtureSnapshot()
	for _, op := range s.Operations {
		if op.StatementID == id {
			op.State, op.CompletedAt = model.StateFinished, fixedNow
			op.InactiveFor, op.ReapedIn = nil, nil
		}
	}
	return s
}

// Defect: the dialog was a frozen picture. x on a RUNNING row, then the
// statement finished, and y still sent the cancel.
func TestDialogOnAFinishedOperationDoesNotCancel(t *testing.T) {
	for _, answer := range []string{"y", "c"} {
		e := newFakeEngine(fixtureSnapshot())
		m := syncModel(t, e, testOptions(), 80, 24)
		for m.selected().StatementID != idInactive {
			press(m, "j")
		}
		press(m, "x")
		must(t, m.confirm != nil, "x opened no dialog")
		e.setSnapshot(finishOp(idInactive))
		refresh(m)
		scr := plain(m)
		must(t, strings.Contains(scr, "Now FINISHED (it was RUNNING when this dialog opened)"), "the dialog does not say what changed:\n%s", scr)
		cmd := press(m, answer)
		if cmd != nil {
			run(t, m, cmd)
		}
		must(t, len(e.Calls()) == 0, "%s: engine called for a finished operation: %v", answer, e.Calls())
		// What still makes sense is offered: the close.
		must(t, m.confirm != nil && m.confirm.kind == actClose && strings.Contains(plain(m), "Not cancelled: it finished"),
			"%s: the close is not offered:\n%s", answer, plain(m))
		run(t, m, press(m, "y"))
		must(t, len(e.Calls()) == 1 && e.Calls()[0] == "close "+idInactive, "%s: calls %v", answer, e.Calls())
	}
}

// The command re-checks against the engine's state, not the last frame:
// a statement that finished between the answer and the call is not
// cancelled either.
func TestCancelCommandRechecksTheEngine(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 80, 24)
	for m.selected().StatementID != idInactive {
		press(m, "j")
	}
	press(m, "x")
	cmd := press(m, "y")
	e.setSnapshot(finishOp(idInactive)) // finished after the answer, before the call
	run(t, m, cmd)
	must(t, len(e.Calls()) == 0, "engine called: %v", e.Calls())
	must(t, strings.Contains(plain(m), "not sent, it is FINISHED"), "status:\n%s", plain(m))
	evs := m.ctx.ring.newest(10, idInactive)
	must(t, len(evs) > 0 && strings.Contains(evs[0].Message, "not sent"), "no event: %+v", evs)
}

// The dialog names the target (id, state, age, SQL on one line) and never
// covers the selected row, at any size and row position; a asks too.
func TestDialogNeverCoversTheSelectedRow(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {80, 23}, {60, 20}, {120, 40}} {
		for _, k := range []string{"a", "c", "x"} {
			for _, moves := range [][]string{nil, {"G"}, {"j", "j", "j"}} {
				m := syncModel(t, newFakeEngine(manySnapshot(30, 0)), testOptions(), sz[0], sz[1])
				press(m, moves...)
				for k == "x" && m.selected().State.Terminal() {
					press(m, "j")
				}
				sel := shortID(m.selected().StatementID, m.ctx.glyphs.Ellipsis)
				press(m, k)
				must(t, m.confirm != nil, "%v %s %v: no dialog", sz, k, moves)
				must(t, strings.Contains(cursorLine(m), sel), "%v %s %v: the dialog covers the selected row %s:\n%s", sz, k, moves, sel, plain(m))
				scr := plain(m)
				must(t, strings.Contains(scr, "SQL: ") && strings.Contains(scr, "age ") && strings.Count(scr, sel) >= 2,
					"%v %s %v: the dialog does not name its target:\n%s", sz, k, moves, scr)
				must(t, strings.Contains(scr, "answer No"), "%v %s %v: the keys are not shown:\n%s", sz, k, moves, scr)
			}
		}
	}
}

// withClients is the fixture with its Clients rows, as the engine adds
// them.
func withClients(s model.Snapshot) model.Snapshot {
	s.Clients = model.AggregateClients(s.Operations, s.GeneratedAt, time.Hour)
	return s
}

// snapshot --filter keeps exactly the operations the TUI lists for the
// same filter: both go through model's one filter (Snapshot.Filtered is
// what the command applies).
func TestSnapshotFilterKeepsWhatTheTUIShows(t *testing.T) {
	s := manySnapshot(10, 3)
	for _, f := range []string{"client:jdbc flag:UNCLOSED", "client:jdbc", "flag:unclosed,close_failed", "user:alice age>5m",
		"state:running idle>1m", "wh:wh-2", "select", `client:"databricks-jdbc" user:etl`} {
		e := newFakeEngine(s)
		m := syncModel(t, e, testOptions(), 120, 40)
		press(m, "d") // every row: snapshot has no collapsed rows
		press(m, "/")
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(f)})
		press(m, "enter")
		var want []string
		for _, op := range s.Filtered(model.FilterSpec{Text: f}).Operations {
			want = append(want, op.StatementID)
		}
		got := ids(m)
		slices.Sort(got)
		slices.Sort(want)
		must(t, strings.Join(got, ",") == strings.Join(want, ","), "%q: the TUI lists %v, snapshot --filter %v", f, got, want)
		must(t, strings.Contains(plain(m), "filter "+strings.ToLower(f)), "%q: the status line does not show the filter:\n%s", f, plain(m))
	}
}

// A malformed filter is said on the status line.
func TestBadFilterIsSaid(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	press(m, "/")
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("usr:alice")})
	press(m, "enter")
	must(t, strings.Contains(plain(m), `filter: unknown key "usr:"`), "not said:\n%s", plain(m))
}

// enter on a Clients row opens Operations filtered to that client; esc
// returns to Clients.
func TestClientDrillDown(t *testing.T) {
	m := syncModel(t, newFakeEngine(withClients(fixtureSnapshot())), testOptions(), 80, 24)
	for m.view != viewClients {
		press(m, "tab")
	}
	c := m.clients.selected()
	must(t, c != nil && cursorLine(m) != "", "no client selected:\n%s", plain(m))
	for c.ClientApplication != "databricks-jdbc" {
		press(m, "j")
		c = m.clients.selected()
	}
	user := c.User
	press(m, "enter")
	must(t, m.view == viewOps, "enter did not open Operations")
	must(t, len(m.ops.rows) > 0, "no rows")
	for _, r := range m.ops.rows {
		op := m.ctx.snap.Operations[r]
		must(t, op.ClientApplication == "databricks-jdbc" && op.User == user, "row %s of %s/%s", op.StatementID, op.ClientApplication, op.User)
	}
	must(t, strings.Contains(plain(m), "esc returns to Clients"), "the way back is not said:\n%s", plain(m))
	press(m, "esc")
	must(t, m.view == viewClients && m.ops.filter.Text == "", "esc did not return to Clients with the filter cleared")
}

// A status message expires; a long one is cut after a whole word.
func TestStatusExpiresAndIsNotCutMidWord(t *testing.T) {
	now := fixedNow
	o := testOptions()
	o.Now = func() time.Time { return now }
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), o, 80, 24)
	long := "Cancel 01ef2c3a… failed after 2s: cancel refused: dbxtop does not hold this operation's handle; the client that started it holds it"
	m.ctx.setStatus(long, true)
	refresh(m)
	lines := strings.Split(plain(m), "\n")
	st := lines[len(lines)-2]
	must(t, strings.HasSuffix(st, "…") && strings.HasPrefix(long, strings.TrimSuffix(st, "…")+" "), "status cut mid-word: %q", st)
	now = now.Add(statusTTL + time.Second)
	refresh(m)
	must(t, !strings.Contains(plain(m), "cancel refused"), "the status did not expire:\n%s", plain(m))
}

// leakySnapshot: one client left four finished operations open; one of
// them is still being read (a client call a second ago), one has no
// known client activity.
func leakySnapshot() model.Snapshot {
	s := fixtureSnapshot()
	for i := range 4 {
		op := &model.OperationView{Operation: &model.Operation{
			StatementID: fmt.Sprintf("04cc%04d-0000-4000-8000-000000000000", i), WarehouseID: "wh-1", User: "etl-bot",
			ClientApplication: "LeakyJDBC 2.6.36", State: model.StateFinished, StartedAt: fixedNow.Add(-10 * time.Minute),
			CompletedAt: fixedNow.Add(-8 * time.Minute), SQL: "SELECT leak", Open: boolp(true),
			ClientActivityKnown: i != 3, ClientLastActivity: fixedNow.Add(-5 * time.Minute)},
			Flags: []model.Flag{{Kind: model.FlagUnclosed, Severity: model.SeverityWarning, Detail: "still open"}}}
		if i == 1 {
			op.ClientLastActivity = fixedNow.Add(-time.Second) // a slow reader, alive
		}
		s.Operations = append(s.Operations, op)
	}
	return s
}

func TestSetActionRecloses(t *testing.T) {
	e := newFakeEngine(leakySnapshot())
	m := syncModel(t, e, testOptions(), 80, 24)
	press(m, "C")
	must(t, m.confirm == nil && strings.Contains(plain(m), "a set action needs a filter"), "C without a filter:\n%s", plain(m))
	press(m, "/")
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("client:leaky")})
	press(m, "enter", "C")
	must(t, m.confirm != nil && m.confirm.set != nil, "C opened no set dialog:\n%s", plain(m))
	p := promptOf(m)
	for _, want := range []string{"Re-close 3 UNCLOSED operations of LeakyJDBC 2.6.36 (etl-bot)?", "04cc0000…, 04cc0002…, 04cc0003…",
		"Skipped 1: their client called within 1m00s", "04cc0001…", "Client activity unknown for 1 of them", "A close cannot be undone"} {
		must(t, strings.Contains(p, want), "the dialog does not say %q: %s", want, p)
	}
	must(t, strings.Contains(plain(m), "Re-close 3 UNCLOSED"), "dialog not on screen:\n%s", plain(m))
	// One of them is closed by its client before the answer.
	s := leakySnapshot()
	s.Operations[len(s.Operations)-1].Open = boolp(false)
	e.setSnapshot(s)
	refresh(m)
	cmd := press(m, "y")
	for cmd != nil {
		msg := cmd()
		_, cmd = m.Update(msg)
	}
	must(t, strings.Join(e.Calls(), ",") == "close 04cc0000-0000-4000-8000-000000000000,close 04cc0002-0000-4000-8000-000000000000", "calls %v", e.Calls())
	var outcomes []string
	for _, ev := range m.ctx.ring.newest(50, "") {
		if strings.HasPrefix(ev.StatementID, "04cc") {
			outcomes = append(outcomes, ev.StatementID[:8]+" "+ev.Message)
		}
	}
	all := strings.Join(outcomes, "\n")
	for _, want := range []string{"04cc0000 Re-close: closed", "04cc0002 Re-close: closed", "04cc0001 Re-close (set) skipped", "04cc0003 Re-close (set) not sent: the operation is already closed"} {
		must(t, strings.Contains(all, want), "Events lack %q:\n%s", want, all)
	}
}

func TestSetActionRefusedReadOnly(t *testing.T) {
	o := testOptions()
	o.ReadOnly = true
	m := syncModel(t, newFakeEngine(leakySnapshot()), o, 80, 24)
	press(m, "/")
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("client:leaky")})
	press(m, "enter", "C")
	must(t, m.confirm == nil && strings.Contains(plain(m), "read-only: re-close of the set refused"), "read-only C:\n%s", plain(m))
}

// "updated Ns ago" is on screen at 80 columns, with the data's age.
func TestUpdatedAgoAt80(t *testing.T) {
	now := fixedNow.Add(3 * time.Second)
	o := testOptions()
	o.Now = func() time.Time { return now }
	for _, w := range []int{80, 60} {
		m := syncModel(t, newFakeEngine(fixtureSnapshot()), o, w, 23)
		must(t, strings.Contains(strings.Split(plain(m), "\n")[0], "updated 3s ago"), "%d: not on the first line:\n%s", w, plain(m))
	}
}

// + and - change how often the screen takes a snapshot, within bounds.
func TestPlusMinusChangeTheScreenRefresh(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 24)
	press(m, "-")
	must(t, m.ctx.screenRefresh() == 2*time.Second && strings.Contains(plain(m), "screen refresh 2s"), "- gave %s:\n%s", m.ctx.screenRefresh(), plain(m))
	press(m, "+", "+", "+", "+", "+")
	must(t, m.ctx.screenRefresh() == 250*time.Millisecond && strings.Contains(plain(m), "stays 250ms"), "+ past the bound gave %s:\n%s", m.ctx.screenRefresh(), plain(m))
	for range 10 {
		press(m, "-")
	}
	must(t, m.ctx.screenRefresh() == 30*time.Second, "- past the bound gave %s", m.ctx.screenRefresh())
	must(t, strings.Contains(strings.Split(plain(m), "\n")[0], "refresh 1s"), "the engine's refresh is no longer in the header:\n%s", plain(m))
}

// enter in Events shows the top event whole, wrapped; ! opens the last
// error so.
func TestEventShownWhole(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 80, 23)
	long := model.Event{At: fixedNow, Kind: model.EventGiveUp, StatementID: idStale,
		Err: &model.ErrorInfo{Kind: model.KindTransport, Call: "GetOperationStatus", Message: strings.Repeat("connection reset by peer while reading the answer ", 4) + "THE-END",
			Attempts: 3, RequestID: reqStale}}
	m.Update(eventMsg{evs: []model.Event{long}, ok: true})
	for m.view != viewEvents {
		press(m, "tab")
	}
	must(t, !strings.Contains(plain(m), "THE-END"), "the long event is not cut to begin with")
	press(m, "enter")
	must(t, strings.Contains(plain(m), "THE-END") && strings.Contains(plain(m), reqStale), "enter does not show it whole:\n%s", plain(m))
	press(m, "tab", "shift+tab", "j", "k")
	must(t, !strings.Contains(plain(m), "THE-END"), "moving did not fold it again")
}

func intp(n int) *int { return &n }

// The Warehouses view: each listed warehouse with its state, size and
// clusters, dbxtop's running and queued counts and flags by kind; a
// stopped one is shown stopped; one only operations name is unknown;
// enter opens its operations and esc returns. Nothing is called.
func TestWarehousesView(t *testing.T) {
	s := fixtureSnapshot()
	s.Workspace.Listing = &model.WarehouseListing{At: fixedNow, Visible: 3, Matched: 3, Warehouses: []model.WarehouseInfo{
		{ID: "wh-1", Name: "Shared BI", State: "RUNNING", Size: "Small", Clusters: intp(1), MinClusters: intp(1), MaxClusters: intp(3)},
		{ID: "wh-9", Name: "Nightly ETL", State: "STOPPED", Size: "Large", Clusters: intp(0), MinClusters: intp(1), MaxClusters: intp(2)},
	}}
	e := newFakeEngine(s)
	for _, w := range []int{120, 80, 60} {
		m := syncModel(t, e, testOptions(), w, 24)
		for m.view != viewWarehouses {
			press(m, "tab")
		}
		scr := plain(m)
		row := func(id string) string {
			for _, l := range strings.Split(scr, "\n") {
				if strings.Contains(l, " "+id+" ") {
					return l
				}
			}
			return ""
		}
		must(t, regexp.MustCompile(`Shared BI +wh-1 +RUNNING .* 1 +1 `).MatchString(row("wh-1")), "%d: wh-1 row %q:\n%s", w, row("wh-1"), scr)
		flags := regexp.MustCompile(`INACT ?1.*UNCLSD ?1`)
		if w < 80 {
			flags = regexp.MustCompile(`INACT ?1`) // the rest is cut: Operations has them
		}
		must(t, flags.MatchString(row("wh-1")), "%d: wh-1 flags %q", w, row("wh-1"))
		must(t, strings.Contains(row("wh-9"), "STOPPED"), "%d: the stopped warehouse %q", w, row("wh-9"))
		must(t, regexp.MustCompile(`\? +wh-2 +\? `).MatchString(row("wh-2")), "%d: wh-2, named only by operations: %q", w, row("wh-2"))
		if w >= 100 {
			must(t, strings.Contains(row("wh-1"), "Small"), "%d: size %q", w, row("wh-1"))
		}
		if w >= 80 {
			must(t, strings.Contains(row("wh-1"), "1/1-3"), "%d: clusters %q", w, row("wh-1"))
		}
		must(t, strings.Contains(scr, "[Warehouses]"), "%d: not in the tabs:\n%s", w, scr)
		press(m, "enter")
		must(t, m.view == viewOps, "enter did not open Operations")
		for _, r := range m.ops.rows {
			must(t, m.ctx.snap.Operations[r].WarehouseID == "wh-1", "row of %s", m.ctx.snap.Operations[r].WarehouseID)
		}
		press(m, "esc")
		must(t, m.view == viewWarehouses, "esc did not return")
	}
	must(t, len(e.Calls()) == 0, "the view called the engine: %v", e.Calls())
	m := syncModel(t, e, testOptions(), 120, 40)
	press(m, "?")
	must(t, strings.Contains(plain(m), "Warehouses: the warehouse's operations"), "Help does not name the view:\n%s", plain(m))
}

// While a source is down, "updated" gives way to the frozen banner: the
// snapshot is new, its data is not.
func TestUpdatedGivesWayToTheFrozenBanner(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	e.health.DiscoveryUp, e.health.DiscoveryFailures, e.health.LastDiscovery = false, 3, fixedNow.Add(-time.Minute)
	m := syncModel(t, e, testOptions(), 80, 24)
	scr := plain(m)
	must(t, !strings.Contains(scr, "updated") && strings.Contains(scr, "data as of 11:59:00"), "frozen:\n%s", scr)
}

// refreshingEngine is a fake engine that polls for itself: + and -
// change its refresh (tui.RefreshSetter).
type refreshingEngine struct {
	*fakeEngine
	mu      sync.Mutex
	refresh time.Duration
}

func (r *refreshingEngine) Refresh() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refresh
}

func (r *refreshingEngine) SetRefresh(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refresh = d
}

// With an engine that polls for itself, + and - change the data's
// refresh (the engine's period), within bounds, and the header says it.
func TestPlusMinusChangeTheEngineRefresh(t *testing.T) {
	eng := &refreshingEngine{fakeEngine: newFakeEngine(fixtureSnapshot()), refresh: 5 * time.Second}
	o := testOptions()
	o.Refresh = 5 * time.Second
	m := newModel(eng, o)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	refresh(m)
	press(m, "+")
	must(t, eng.Refresh() == 2*time.Second, "+ set the engine's refresh to %s, want 2s", eng.Refresh())
	must(t, strings.Contains(strings.Split(plain(m), "\n")[0], "refresh 2s"), "the header does not show the new refresh:\n%s", plain(m))
	must(t, m.ctx.screenRefresh() <= 2*time.Second, "the screen reads every %s, less often than the data", m.ctx.screenRefresh())
	press(m, "+", "+", "+")
	must(t, eng.Refresh() == time.Second && strings.Contains(plain(m), "refresh stays 1s"), "+ past the bound gave %s:\n%s", eng.Refresh(), plain(m))
	for range 10 {
		press(m, "-")
	}
	must(t, eng.Refresh() == time.Minute, "- past the bound gave %s", eng.Refresh())
	must(t, m.ctx.screenRefresh() == 5*time.Second, "a slower data refresh slowed the screen to %s", m.ctx.screenRefresh())
}

// TestProxiesInWarehousesView: with --proxy, the Warehouses view lists
// each proxy read, its version and whether it answered; one that does
// not shows "?" with the reason, and differing versions are warned of.
// The drill-down names the proxies that saw an operation and what is
// unknown of it.
func TestProxiesInWarehousesView(t *testing.T) {
	s := fixtureSnapshot()
	s.Workspace.Proxies = []model.ProxyStatus{
		{Name: "127.0.0.2:8445", Up: true, Version: "1.4.0", Upstream: "ok", LastOK: fixedNow.Add(-2 * time.Second), Operations: 12},
		{Name: "127.0.0.3:8445", Up: false, Version: "1.5.0", Reason: "connection refused", LastOK: fixedNow.Add(-40 * time.Second)},
	}
	e := newFakeEngine(s)
	for _, w := range []int{120, 80} {
		m := syncModel(t, e, testOptions(), w, 24)
		for m.view != viewWarehouses {
			press(m, "tab")
		}
		scr := plain(m)
		must(t, regexp.MustCompile(`127\.0\.0\.2:8445 +up +1\.4\.0 +ok +12 `).MatchString(scr), "%d: the proxy that answers:\n%s", w, scr)
		must(t, regexp.MustCompile(`127\.0\.0\.3:8445 +DOWN +1\.5\.0 .* \? +\? since 40s: conn`).MatchString(scr), "%d: the proxy down:\n%s", w, scr)
		must(t, strings.Contains(scr, "proxy versions differ: 1.4.0 on 127.0.0.2:8445; 1.5.0 on 127.0.0.3:8445"), "%d: version skew:\n%s", w, scr)
		must(t, strings.Contains(scr, "wh-1"), "%d: the warehouses stay:\n%s", w, scr)
	}
	for i := range s.Operations {
		v := *s.Operations[i]
		op := *v.Operation
		op.Proxy = &model.ProxyAccount{CloseOutcome: "open", SeenBy: []string{"127.0.0.2:8445", "127.0.0.3:8445"},
			Unknown: "proxy 127.0.0.3:8445 (not answering since 11:59:20: connection refused; its part is as of 11:59:19)"}
		v.Operation = &op
		s.Operations[i] = &v
	}
	m := syncModel(t, newFakeEngine(s), testOptions(), 120, 70)
	press(m, "enter")
	scr := strings.Join(strings.Fields(plain(m)), " ")
	must(t, strings.Contains(scr, "seen by 127.0.0.2:8445, 127.0.0.3:8445"), "drill-down names the proxies:\n%s", plain(m))
	must(t, strings.Contains(scr, "? proxy 127.0.0.3:8445 (not answering since 11:59:20: connection refused"), "drill-down says what is unknown:\n%s", plain(m))
}
