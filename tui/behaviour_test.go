package tui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

func TestFirstSnapshotSelectsFirstRowMostSevereFirst(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	got := ids(m)
	// Critical first (CLOSE_FAILED has two flags, then INACTIVE), then
	// warnings, then the rest.
	must(t, got[0] == idCloseFailed && got[1] == idInactive, "order %v", got)
	must(t, m.selected().StatementID == idCloseFailed, "cursor on %s", m.ops.cursorID)
}

func TestCursorStaysOnOperationAcrossRefresh(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40)
	for m.selected().StatementID != idStale {
		press(m, "j")
	}
	before := m.ops.cursorIdx

	// A new critical operation appears at the top and the stale one
	// becomes healthy: its row moves, the cursor must follow it.
	s := fixtureSnapshot()
	s.Operations[1].Flags = nil
	s.Operations = append(s.Operations, &model.OperationView{
		Operation: &model.Operation{StatementID: "01ef9999-0000-4000-8000-000000000000", WarehouseID: "wh-1", State: model.StateRunning, StartedAt: fixedNow.Add(-time.Hour)},
		Flags:     []model.Flag{{Kind: model.FlagInactive, Severity: model.SeverityCritical}},
	})
	e.setSnapshot(s)
	refresh(m)
	must(t, m.selected() != nil && m.selected().StatementID == idStale, "cursor moved to %v", m.ops.cursorID)
	must(t, m.ops.cursorIdx != before, "row did not move (%d); the test proves nothing", before)
	must(t, strings.Contains(plain(m), "❯ "), "no cursor marker on screen")
	// The marked row is the stale operation's.
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.HasPrefix(l, "❯ ") {
			must(t, strings.Contains(l, idStale[:8]), "marked row is %q", l)
		}
	}
}

func TestCursorStaysAcrossSortAndFilter(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	for m.selected().StatementID != idUnclosed {
		press(m, "j")
	}
	for i := range model.SortKeys {
		press(m, "s", strconv.Itoa(i+1))
		must(t, m.selected() != nil && m.selected().StatementID == idUnclosed, "sort %s moved the cursor to %s", m.ops.sort, m.ops.cursorID)
	}
	press(m, "S")
	must(t, m.selected().StatementID == idUnclosed, "reverse moved the cursor")

	press(m, "/", "w", "h", "-", "1", "enter")
	must(t, len(m.ops.rows) == 4, "filter wh-1 shows %d rows", len(m.ops.rows))
	must(t, m.selected().StatementID == idUnclosed, "filter moved the cursor")

	// A filter that hides the operation says so, and clearing it brings
	// the cursor back to the same operation.
	press(m, "/", "backspace", "backspace", "backspace", "backspace", "b", "o", "b", "enter")
	must(t, m.selected() == nil, "cursor silently moved to %v", m.selected())
	must(t, strings.Contains(plain(m), "operation 01ef2c3c… is hidden by the filter"), "no hidden line:\n%s", plain(m))
	press(m, "esc")
	must(t, m.ops.filter.Text == "" && m.selected().StatementID == idUnclosed, "esc did not restore the cursor: %q %v", m.ops.filter.Text, m.ops.cursorID)
}

func TestGoneOperationIsAnnouncedNotReplaced(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40)
	for m.selected().StatementID != idStale {
		press(m, "j")
	}
	idx := m.ops.cursorIdx
	s := fixtureSnapshot()
	s.Operations = slices.DeleteFunc(s.Operations, func(op *model.OperationView) bool { return op.StatementID == idStale })
	e.setSnapshot(s)
	refresh(m)
	screen := plain(m)
	must(t, strings.Contains(screen, "operation 01ef2c3b… is gone (closed or reaped)"), "no gone line:\n%s", screen)
	must(t, m.selected() == nil, "cursor silently moved to %v", m.selected())
	must(t, !strings.Contains(screen, "❯ "), "a row is marked although the operation is gone")
	// An action now has no target rather than the wrong one.
	must(t, press(m, "x") == nil && m.confirm == nil, "cancel offered with no selection")
	// j resumes at the row that took its place.
	press(m, "j")
	must(t, m.selected() != nil && m.ops.cursorIdx == idx, "j went to %d, want %d", m.ops.cursorIdx, idx)
}

func TestConfirmationDefaultsToNo(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40)
	for m.selected().StatementID != idInactive {
		press(m, "j")
	}
	want := "Cancel 01ef2c3a… on wh-1 (alice@example.com, RUNNING, age 7m00s)? SQL: SELECT c.customer_id, sum(o.amount) AS total FROM sales.orders o JOIN sales.customers c ON o.customer_id = c.id WHERE o.order_date >= '2026-01-01' GROUP BY c.customer_id ORDER BY total DESC dbxtop sends CancelExecution (POST /api/2.0/sql/statements/{id}/cancel); the statement stops on the server. y: cancel only (it stays open until its client closes it); c: cancel and close (dbxtop then sends statement close (DELETE /api/2.0/sql/statements/{id}))."
	for _, answer := range []string{"enter", "n", "esc", "x", "Y", "C"} {
		must(t, press(m, "x") == nil, "x ran something before confirmation")
		must(t, m.confirm != nil && promptOf(m) == want, "prompt %q", promptOf(m))
		must(t, strings.Contains(plain(m), "Cancel 01ef2c3a… on wh-1"), "prompt not on screen:\n%s", plain(m))
		cmd := press(m, answer)
		must(t, cmd == nil && m.confirm == nil, "answer %q did not close the dialog as No", answer)
		must(t, len(e.Calls()) == 0, "answer %q called the engine: %v", answer, e.Calls())
		must(t, strings.Contains(plain(m), "not done (answered No)"), "no No status after %q", answer)
	}
	press(m, "x")
	cmd := press(m, "y")
	must(t, m.ctx.busy[idInactive] == "canceling…", "no progress shown: %q", m.ctx.busy[idInactive])
	must(t, strings.Contains(plain(m), "canceling…"), "progress not on screen")
	run(t, m, cmd)
	must(t, slices.Equal(e.Calls(), []string{"cancel " + idInactive}), "engine calls %v", e.Calls())
	must(t, strings.Contains(plain(m), "Cancel 01ef2c3a…: cancel sent"), "no result status:\n%s", plain(m))
	evs := m.ctx.ring.newest(10, idInactive)
	must(t, len(evs) == 2 && evs[0].Kind == model.EventAction && strings.Contains(evs[0].Message, "cancel sent"), "events %+v", evs)
}

// "cancel and close": an orphan dbxtop cancels would otherwise stay open
// (UNCLOSED) with nobody to close it.
func TestCancelAndClose(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	o := testOptions()
	o.ActionPath = "thrift"
	m := syncModel(t, e, o, 80, 24)
	for m.selected().StatementID != idInactive {
		press(m, "j")
	}
	press(m, "x")
	must(t, m.confirm != nil && strings.Contains(promptOf(m), "CancelOperation (Thrift)") &&
		strings.Contains(promptOf(m), "CloseOperation (Thrift)"), "prompt does not name the Thrift calls: %q", promptOf(m))
	must(t, strings.Contains(plain(m), "c cancels and closes"), "dialog does not offer cancel and close:\n%s", plain(m))
	run(t, m, press(m, "c"))
	must(t, slices.Equal(e.Calls(), []string{"cancel " + idInactive, "adopt " + idInactive}), "calls %v", e.Calls())
	must(t, strings.Contains(plain(m), "dbxtop closes it once it stops"), "status:\n%s", plain(m))
}

func TestEveryActionNamesItsEffect(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40)
	for k, want := range map[string]string{
		"a": "It has already finished: dbxtop closes it on the server now (statement close (DELETE /api/2.0/sql/statements/{id})).",
		"c": "dbxtop sends statement close (DELETE /api/2.0/sql/statements/{id}) now",
	} {
		press(m, k)
		head := map[string]string{"a": "Adopt", "c": "Re-close"}[k] + " 01ef2c3d… on wh-2 (dave@example.com, FINISHED, age 12m00s)? SQL: INSERT INTO audit.events SELECT * FROM staging.events "
		must(t, m.confirm != nil && strings.HasPrefix(promptOf(m), head+want), "%s prompt %q", k, promptOf(m))
		run(t, m, press(m, "y"))
	}
	must(t, slices.Equal(e.Calls(), []string{"adopt " + idCloseFailed, "close " + idCloseFailed}) ||
		slices.Equal(e.Calls(), []string{"close " + idCloseFailed, "adopt " + idCloseFailed}), "calls %v", e.Calls())
}

func TestCancelOfAFinishedOperationIsNotOffered(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40) // cursor on the FINISHED close-failed operation
	must(t, press(m, "x") == nil && m.confirm == nil, "cancel offered for a finished operation")
	must(t, strings.Contains(plain(m), "01ef2c3d… is FINISHED: nothing to cancel (c re-closes it)"), "status:\n%s", plain(m))
	must(t, len(e.Calls()) == 0, "engine called: %v", e.Calls())
}

func TestActionFailureIsShownInRowStatusAndEvents(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	e.actErr = errBoom
	m := syncModel(t, e, testOptions(), 120, 40)
	press(m, "c")
	run(t, m, press(m, "y"))
	screen := plain(m)
	must(t, strings.Contains(screen, "Re-close 01ef2c3d… failed after"), "status:\n%s", screen)
	must(t, strings.Contains(screen, ": boom"), "cause missing:\n%s", screen)
	must(t, strings.Contains(m.ctx.ring.at(0).Message, "boom"), "event %+v", m.ctx.ring.at(0))
}

func TestReadOnlyKeysDoNothingAndAreHidden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine bool // the engine says read-only (no --read-only given)
	}{{"option", false}, {"engine", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFakeEngine(fixtureSnapshot())
			e.readOnly = tc.engine
			o := testOptions()
			o.ReadOnly = !tc.engine
			m := syncModel(t, e, o, 120, 40)
			for _, k := range []string{"a", "c", "x", "y", "a", "enter"} {
				press(m, k)
				must(t, m.confirm == nil, "key %q opened a confirmation in read-only mode", k)
			}
			press(m, "esc", "x")
			must(t, strings.Contains(plain(m), "read-only: cancel refused"), "no visible refusal:\n%s", plain(m))
			must(t, len(e.Calls()) == 0, "engine called: %v", e.Calls())
			must(t, strings.Contains(plain(m), "READ-ONLY"), "no READ-ONLY badge")
			must(t, !strings.Contains(plain(m), "cancel statement"), "footer advertises cancel")
			press(m, "esc", "?")
			help := plain(m)
			must(t, strings.Contains(help, "adopt, re-close and cancel are refused"), "help:\n%s", help)
			for _, s := range []string{"cancel statement", "c          re-close", "adopt (close", "(x)", "(c)"} {
				must(t, !strings.Contains(help, s), "help lists %q", s)
			}
		})
	}
}

func TestEngineRefusalIsShownNotPanicked(t *testing.T) {
	// The keys are enabled (the TUI was not told) but the engine refuses.
	e := newFakeEngine(fixtureSnapshot())
	e.actErr = poller.ErrReadOnly
	m := syncModel(t, e, testOptions(), 120, 40)
	press(m, "c")
	run(t, m, press(m, "y"))
	must(t, strings.Contains(plain(m), "read-only mode: dbxtop refuses to change anything on the server"), "refusal not shown:\n%s", plain(m))
	must(t, strings.Contains(plain(m), "close failed"), "row does not show the failure")
}

func TestPauseFreezesOrderButNotValues(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40)
	press(m, "space")
	frozen := ids(m)
	must(t, strings.Contains(plain(m), "PAUSED"), "no PAUSED badge")

	// The healthy operation turns critical: unpaused it would jump to the
	// top; paused it stays, but its flag shows. A new one goes last.
	s := fixtureSnapshot()
	for i := range s.Operations {
		if s.Operations[i].StatementID == idHealthy {
			s.Operations[i].Flags = []model.Flag{{Kind: model.FlagInactive, Severity: model.SeverityCritical}}
		}
	}
	newID := "01efaaaa-0000-4000-8000-000000000000"
	s.Operations = append(s.Operations, &model.OperationView{Operation: &model.Operation{StatementID: newID, State: model.StateRunning},
		Flags: []model.Flag{{Kind: model.FlagStale, Severity: model.SeverityCritical}}})
	e.setSnapshot(s)
	refresh(m)
	got := ids(m)
	must(t, slices.Equal(got[:len(frozen)], frozen) && got[len(got)-1] == newID, "paused order changed: %v", got)
	must(t, m.counts.crit[model.FlagInactive] == 2, "values did not update while paused")

	press(m, "space")
	got = ids(m)
	must(t, !strings.Contains(plain(m), "PAUSED"), "PAUSED still shown")
	must(t, got[0] != frozen[0] || got[1] != frozen[1], "unpausing did not re-sort: %v", got)
}

func TestFilterAndFlaggedOnly(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	press(m, "/", "A", "l", "I", "c", "E")
	must(t, slices.Equal(ids(m), []string{idInactive}), "filter alice: %v", ids(m))
	must(t, strings.Contains(plain(m), "/AlIcE_"), "filter input not shown")
	press(m, "enter")
	must(t, !m.ops.box.active && m.ops.filter.Text == "alice", "enter did not keep the filter")
	press(m, "esc")
	must(t, len(m.ops.rows) == 7 && m.ops.doneHidden == 1, "esc did not clear: %d", len(m.ops.rows))

	press(m, "/", "c", "l", "o", "s", "e", "_", "f", "enter") // flag kinds match too
	must(t, slices.Equal(ids(m), []string{idCloseFailed}), "filter close_f: %v", ids(m))
	press(m, "esc", "f")
	must(t, len(m.ops.rows) == 5, "flagged only: %d rows", len(m.ops.rows))
	for _, id := range ids(m) {
		must(t, id != idHealthy && id != idUnknown && id != idClosed, "unflagged %s shown", id)
	}
	must(t, strings.Contains(plain(m), "flagged only"), "header does not say flagged only")
}

func TestSortCyclesColumnsAndReverses(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	press(m, "s", "3") // the menu's third key, age, descending: oldest first
	must(t, m.ops.sort == model.SortAge, "sort %s", m.ops.sort)
	got := ids(m)
	must(t, got[0] == idReaped && got[len(got)-1] == idUnknown, "age desc %v", got)
	must(t, strings.Contains(plain(m), "AGE▼"), "no sort marker")
	press(m, "S")
	got = ids(m)
	must(t, got[0] == idUnknown && got[len(got)-1] == idReaped, "age asc %v", got)
	must(t, strings.Contains(plain(m), "AGE▲"), "no reversed marker")
	press(m, "s", "5") // user
	must(t, m.ops.sort == model.SortUser && ids(m)[0] == idInactive, "user asc %v", ids(m))
}

func TestDetailShowsEverything(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40)
	for _, ev := range fixtureEvents() {
		m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
	}
	press(m, "enter") // close-failed operation
	screen := plain(m)
	for _, want := range []string{
		"Operation " + idCloseFailed,
		"!! CRIT CLOSE_FAILED: 3 close attempts failed; next in 8s",
		"INSERT INTO audit.events SELECT * FROM staging.events",
		"last close error: CloseOperation: unavailable HTTP 503 TEMPORARILY_UNAVAILABLE",
		"(4 attempts in 3s) request_id " + reqClose,
		"failed, 3 attempts; next try in 8s",
		"close-failed",
		"adopted           yes",
	} {
		want = strings.ReplaceAll(want, "!! CRIT", "● CRIT")
		must(t, strings.Contains(screen, want), "detail lacks %q:\n%s", want, screen)
	}
	press(m, "esc", "j", "enter") // the INACTIVE one: long SQL, wrapped
	screen = plain(m)
	must(t, strings.Contains(screen, "FROM sales.orders o JOIN sales.customers c ON o.customer_id = c.id"), "SQL not whole:\n%s", screen)
	must(t, strings.Contains(screen, "6m00s →1m10s"), "no reaper countdown")
}

func TestExportWritesPrivateFiles(t *testing.T) {
	dir := t.TempDir()
	o := testOptions()
	o.ExportDir = dir
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), o, 120, 40)
	for _, ev := range fixtureEvents() {
		m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
	}
	msg := run(t, m, press(m, "e")).(exportDoneMsg)
	must(t, msg.err == nil, "export: %v", msg.err)
	jsonPath := filepath.Join(dir, "dbxtop-snapshot-20261129T120000Z.json")
	mdPath := filepath.Join(dir, "dbxtop-incident-20261129T120000Z.md")
	must(t, slices.Equal(msg.paths, []string{jsonPath, mdPath}), "paths %v", msg.paths)
	for _, p := range msg.paths {
		fi, err := os.Stat(p)
		must(t, err == nil, "stat: %v", err)
		must(t, fi.Mode().Perm() == 0o600, "%s mode %v", p, fi.Mode().Perm())
	}
	must(t, strings.Contains(plain(m), "exported ") && strings.Contains(plain(m), filepath.Base(jsonPath)) && strings.Contains(plain(m), filepath.Base(mdPath)), "status does not say where:\n%s", plain(m))

	raw, err := os.ReadFile(jsonPath)
	must(t, err == nil, "%v", err)
	var back model.Snapshot
	must(t, json.Unmarshal(raw, &back) == nil, "JSON does not decode into model.Snapshot")
	// Decoding puts the operations in model's order (the fixture is
	// assembled by hand, in an order of its own).
	want := slices.Clone(fixtureSnapshot().Operations)
	model.SortOperations(want, model.SortSeverity, true)
	must(t, len(back.Operations) == 8 && back.Operations[0].StatementID == want[0].StatementID, "round trip lost operations")
	checkSection9(t, raw)

	md, _ := os.ReadFile(mdPath)
	for _, want := range []string{idCloseFailed, "CLOSE_FAILED", "vs-ingest", reqExhausted} {
		must(t, bytes.Contains(md, []byte(want)), "markdown lacks %q:\n%s", want, md)
	}

	// Export into a directory that does not exist: the error says where.
	m.ctx.opts.ExportDir = filepath.Join(dir, "missing")
	msg = run(t, m, press(m, "e")).(exportDoneMsg)
	must(t, msg.err != nil && strings.Contains(plain(m), "missing"), "export error not shown: %v\n%s", msg.err, plain(m))
}

// checkSection9 asserts the snapshot JSON top-level shape (docs/model.md).
func checkSection9(t *testing.T, raw []byte) {
	t.Helper()
	var obj map[string]any
	must(t, json.Unmarshal(raw, &obj) == nil, "not a JSON object")
	must(t, obj["schema"] == model.SnapshotSchema, "schema %v; keys %v", obj["schema"], keys(obj))
	for _, k := range []string{"generated_at", "workspace", "summary", "operations", "endpoints", "errors"} {
		_, ok := obj[k]
		must(t, ok, "§9 key %q missing", k)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestCopyUsesOSC52(t *testing.T) {
	t.Setenv("TMUX", "")
	var clip bytes.Buffer
	o := testOptions()
	o.Clipboard = &clip
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), o, 120, 40)
	run(t, m, press(m, "y"))
	want := "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(idCloseFailed)) + "\x07"
	must(t, clip.String() == want, "clipboard got %q want %q", clip.String(), want)
	clip.Reset()
	run(t, m, press(m, "Y"))
	must(t, strings.Contains(clip.String(), base64.StdEncoding.EncodeToString([]byte("INSERT INTO audit.events"))[:20]), "SQL not copied: %q", clip.String())
	must(t, strings.Contains(plain(m), "copy SQL: sent"), "no status")
}

func TestTooSmallTerminalSaysSo(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 59, 20)
	v := m.View()
	lines := strings.Split(v, "\n")
	must(t, len(lines) == 20, "%d lines", len(lines))
	must(t, strings.Contains(v, "terminal too small: 59×20, dbxtop needs at least 60×20"), "message:\n%s", v)
	for _, sz := range [][2]int{{60, 20}, {80, 23}, {80, 24}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		must(t, strings.Contains(plain(m), "STATEMENT"), "%v is not usable:\n%s", sz, plain(m))
	}
}

func TestScreenFitsExactly(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		for _, o := range []Options{testOptions(), func() Options { o := testOptions(); o.ASCII = true; return o }()} {
			m := syncModel(t, newFakeEngine(fixtureSnapshot()), o, sz[0], sz[1])
			for _, ev := range fixtureEvents() {
				m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
			}
			for _, keys := range [][]string{nil, {"enter"}, {"esc", "x"}, {"n", "tab"}, {"enter"}, {"tab"}, {"tab"}} {
				press(m, keys...)
				lines := strings.Split(m.View(), "\n")
				must(t, len(lines) == sz[1], "%v %v: %d lines", sz, keys, len(lines))
				for _, l := range lines {
					must(t, ansi.StringWidth(l) <= sz[0], "%v %v: line too wide (%d): %q", sz, keys, ansi.StringWidth(l), ansi.Strip(l))
				}
			}
		}
	}
}

func TestColumnsCollapseByPriority(t *testing.T) {
	names := func(w int) []colID {
		cols, _ := layout(w, flagCellMax)
		var out []colID
		for _, c := range cols {
			out = append(out, c.id)
		}
		return out
	}
	// WAREHOUSE outlasts AGE and USER (docs/operator-guide.md, "Small terminals").
	must(t, slices.Equal(names(80), []colID{colFlag, colID_, colState, colUser, colWarehouse, colInactive}), "80: %v", names(80))
	must(t, slices.Equal(names(70), []colID{colFlag, colID_, colState, colWarehouse, colInactive}), "70: %v", names(70))
	must(t, slices.Equal(names(60), []colID{colFlag, colID_, colState, colInactive}), "60: %v", names(60))
	must(t, slices.Contains(names(120), colSQL) && slices.Contains(names(120), colClose), "120: %v", names(120))
	must(t, !slices.Contains(names(100), colSQL) && !slices.Contains(names(100), colClose) && slices.Contains(names(100), colRetries), "100: %v", names(100))
	must(t, !slices.Contains(names(110), colSQL) && slices.Contains(names(110), colClose), "110: %v", names(110))
}

// With room to spare USER and WAREHOUSE widen before SQL takes the rest,
// and an unflagged table's FLAG column is only as wide as its title.
func TestColumnsAdaptToWidth(t *testing.T) {
	width := func(cols []column, id colID) int {
		for _, c := range cols {
			if c.id == id {
				return c.width
			}
		}
		return -1
	}
	cols, sql := layout(120, 6)
	must(t, width(cols, colFlag) == 6 && sql >= 25, "120 without flags: FLAG %d, SQL %d", width(cols, colFlag), sql)
	cols, sql = layout(160, 21)
	must(t, width(cols, colUser) > 11 && width(cols, colWarehouse) >= 10 && sql >= sqlComfort, "160: %v sql %d", cols, sql)
	cols, sql = layout(200, 21)
	must(t, width(cols, colUser) == 24 && width(cols, colWarehouse) == 20 && sql > 60, "200: user %d wh %d sql %d", width(cols, colUser), width(cols, colWarehouse), sql)
}

func TestEventsRingKeepsNewest(t *testing.T) {
	r := newRing(eventRing)
	for i := range 1500 {
		r.push(model.Event{Message: string(rune('a' + i%26)), At: fixedNow.Add(time.Duration(i) * time.Second)})
	}
	must(t, r.len() == eventRing, "len %d", r.len())
	must(t, r.at(0).At.Equal(fixedNow.Add(1499*time.Second)), "newest %v", r.at(0).At)
	must(t, r.at(eventRing-1).At.Equal(fixedNow.Add(500*time.Second)), "oldest %v", r.at(eventRing-1).At)
}

func TestEventsViewNewestFirst(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	for _, ev := range fixtureEvents() {
		m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
	}
	press(m, "tab", "tab")
	screen := plain(m)
	iCap := strings.Index(screen, "11:59:50  capacity")
	iRetry := strings.Index(screen, "11:58:40  retry")
	must(t, iCap > 0 && iRetry > iCap, "not newest first:\n%s", screen)
	must(t, strings.Contains(screen, reqExhausted), "request id missing")
	// A closed channel stops the reader instead of spinning.
	_, cmd := m.Update(eventMsg{})
	must(t, cmd == nil, "reader re-armed on a closed channel")
}

func TestEndpointsExhaustedAndExpand(t *testing.T) {
	m := syncModel(t, newFakeEngine(fixtureSnapshot()), testOptions(), 120, 40)
	press(m, "tab")
	screen := plain(m)
	for _, want := range []string{"● EXHAUSTED", "100.0%", "2.0M/2.0M", "RESOURCE_EXHAUSTED: Endpoint vs-ingest has reached its row limit", "request_id " + reqExhausted, "▲ CAPACITY", "full in 12m00s"} {
		must(t, strings.Contains(screen, want), "endpoints lack %q:\n%s", want, screen)
	}
	must(t, !strings.Contains(screen, "main.docs.chunks_idx"), "indexes shown before expand")
	press(m, "enter")
	must(t, strings.Contains(plain(m), "main.docs.chunks_idx"), "enter did not expand")
	press(m, "j", "j", "enter")
	must(t, strings.Contains(plain(m), "NOT READY  syncing"), "third endpoint's index:\n%s", plain(m))
}

func TestOrderIsComputedInTheFetchCommand(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	m := syncModel(t, e, testOptions(), 120, 40)
	msg := m.fetch()().(snapMsg)
	must(t, slices.Equal(msg.rows.rows, m.ops.rows), "command order %v differs from %v", msg.rows.rows, m.ops.rows)
	// The operator re-sorts while the snapshot is in flight: the stale
	// order is not applied.
	press(m, "s", "3")
	want := slices.Clone(m.ops.rows)
	m.Update(msg)
	must(t, slices.Equal(m.ops.rows, want), "stale order applied: %v want %v", m.ops.rows, want)
}

// FuzzOperationsScreen renders arbitrary server-provided strings (SQL,
// user, warehouse, error text and request ids come from the server) and
// checks the screen keeps its shape: exactly height lines, none wider
// than the terminal.
func FuzzOperationsScreen(f *testing.F) {
	f.Add("SELECT 1", "alice", "wh-1", "boom", 80, 24)
	f.Add("SELECT\t*\nFROM x\r\n", "名前", "倉庫-1", "\x1b[31mred\x1b[0m", 120, 40)
	f.Add(strings.Repeat("é", 500), "", "", strings.Repeat("x", 2000), 81, 25)
	f.Add("\u200d\u0301", "\x00", "\x7f", "⏳⏳", 200, 60)
	f.Fuzz(func(t *testing.T, sql, user, wh, errText string, w, h int) {
		w, h = 80+(w%120+120)%120, 24+(h%40+40)%40
		s := fixtureSnapshot()
		s.Operations[0].SQL, s.Operations[0].User, s.Operations[0].WarehouseID = sql, user, wh
		s.Operations[0].LastError = &model.ErrorInfo{Kind: model.KindTransport, Message: errText, RequestID: errText}
		s.Endpoints[0].Name, s.Endpoints[0].LastError.Message = wh, errText
		m := syncModel(t, newFakeEngine(s), testOptions(), w, h)
		for _, keys := range [][]string{nil, {"/", "a", "enter"}, {"esc", "enter"}, {"esc", "x"}, {"n", "tab"}, {"enter"}} {
			press(m, keys...)
			lines := strings.Split(m.View(), "\n")
			if len(lines) != h {
				t.Fatalf("%v: %d lines, want %d", keys, len(lines), h)
			}
			for _, l := range lines {
				if ansi.StringWidth(l) > w {
					t.Fatalf("%v: line of %d cells > %d: %q", keys, ansi.StringWidth(l), w, l)
				}
			}
		}
	})
}
