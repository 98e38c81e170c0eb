package tui

import (
	"slices"
	"sort"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
)

// opsModel is the Operations table: its row order (sort, filter, pause),
// its cursor and scroll. The detail view reads the selected operation
// from it.
type opsModel struct {
	ctx           *programContext
	width, height int

	// rows are indices into snap.Operations in display order, rebuilt per
	// snapshot, sort or filter change, never per frame; cursorRow is the
	// cursor operation's row in them (-1: not listed), found while rows
	// are set (no map of every id per refresh).
	rows      []int
	cursorRow int

	// The cursor is an operation, not a row number: cursorID survives
	// every refresh, sort and filter change. cursorIdx is where it was
	// last seen, so j/k can resume nearby once it is gone.
	cursorID  string
	cursorIdx int
	offset    int
	missing   missingKind
	// missingSeq: when (programContext.seq) missing last became non-present.
	missingSeq int
	// chosen: the operator moved the cursor. Until then it stays on the
	// top row whatever that row is, and nothing is said about an
	// operation the operator never picked.
	chosen bool

	sort      model.SortKey
	desc      bool
	filter    model.FilterSpec
	box       filterBox
	menu      sortMenu
	paused    bool
	frozen    map[string]int // replaced, never mutated: commands read it
	frozenGen int

	// Derived in setRows, never per frame.
	flagW      int   // widest flag label among the rows
	doneHidden int   // finished-and-closed operations collapsed (d shows them)
	flaggedAt  []int // display indices of flagged rows, ascending

	hidden map[colID]bool // columns ui.columns leaves out
}

// missingKind says why the cursor's operation is not on screen.
type missingKind int

const (
	present   missingKind = iota
	gone                  // the server no longer has it (closed or reaped)
	hidden                // the filter hides it
	collapsed             // it finished and was closed: collapsed with the others (d shows them)
)

func newOpsModel(ctx *programContext) *opsModel {
	return &opsModel{ctx: ctx, sort: model.SortSeverity, desc: true /* most severe first */, filter: model.FilterSpec{HideDone: true}, cursorRow: -1, hidden: hiddenColumns(ctx.opts.Columns)}
}

func (m *opsModel) SetSize(w, h int) {
	m.width, m.height = w, h
	m.ensureVisible()
}

func (m *opsModel) Capturing() bool { return m.box.active || m.menu.open }

func (m *opsModel) ShortHelp() []key.Binding {
	k := &m.ctx.keys
	return enabledKeys(k.Detail, k.Filter, k.Flagged, k.Sort, k.Cancel, k.Close, k.CopyID)
}

func (m *opsModel) FullHelp() [][]key.Binding {
	if len(m.ctx.snap.Workspaces) > 1 {
		return append(m.fullHelp(), []key.Binding{m.ctx.keys.Workspace})
	}
	return m.fullHelp()
}

func (m *opsModel) fullHelp() [][]key.Binding {
	k := &m.ctx.keys
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Detail, k.Back},
		{k.Sort, k.SortReverse, k.Filter, k.Flagged, k.Pause, k.Finished},
		enabledKeys(k.Adopt, k.Close, k.Cancel, k.CloseSet, k.CancelSet, k.CopyID, k.CopySQL),
	}
}

// Update handles the table's keys; row actions (a, c, x, y, Y) are the
// root's, since the detail view shares them.
func (m *opsModel) Update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	if m.box.active {
		if m.box.key(km) {
			m.filter.Text = m.box.text
			m.rebuild()
		}
		return nil
	}
	if m.menu.open {
		m.menuKey(km)
		return nil
	}
	k := &m.ctx.keys
	switch {
	case key.Matches(km, k.Up):
		m.moveCursor(-1)
	case key.Matches(km, k.Down):
		m.moveCursor(1)
	case key.Matches(km, k.PageUp):
		m.moveCursor(-m.tableRows())
	case key.Matches(km, k.PageDown):
		m.moveCursor(m.tableRows())
	case key.Matches(km, k.Top):
		m.moveTo(0)
	case key.Matches(km, k.Bottom):
		m.moveTo(len(m.rows) - 1)
	case key.Matches(km, k.Sort):
		m.openSortMenu()
	case key.Matches(km, k.SortReverse):
		m.desc = !m.desc
		m.resort()
	case key.Matches(km, k.Filter):
		m.box.open()
	case key.Matches(km, k.Back):
		if m.filter.Text != "" {
			m.setFilterText("")
		}
	case key.Matches(km, k.Flagged):
		m.filter.FlaggedOnly = !m.filter.FlaggedOnly
		m.rebuild()
	case key.Matches(km, k.Finished):
		m.filter.HideDone = !m.filter.HideDone
		m.rebuild()
	case key.Matches(km, k.Pause):
		m.setPaused(!m.paused)
	case key.Matches(km, k.Workspace):
		m.filter.Workspace = nextWorkspace(m.ctx.snap.Workspaces, m.filter.Workspace)
		m.rebuild()
	}
	return nil
}

// nextWorkspace is the switcher: all → the first workspace → … → the last
// → all. With one workspace it stays on all.
func nextWorkspace(ws []model.WorkspaceStatus, cur string) string {
	if len(ws) < 2 {
		return ""
	}
	if cur == "" {
		return ws[0].Name
	}
	for i, w := range ws {
		if w.Name == cur && i+1 < len(ws) {
			return ws[i+1].Name
		}
	}
	return ""
}

func (m *opsModel) setFilterText(s string) {
	m.box.set(s)
	m.filter.Text = m.box.text
	m.rebuild()
}

// resort applies a new sort key or direction. While paused the operator
// asked for a new order explicitly, so it is frozen again in that order.
func (m *opsModel) resort() {
	if m.paused {
		m.paused = false
		m.rebuild()
		m.paused = true
		m.freeze()
	}
	m.rebuild()
}

// rebuild recomputes rows for the current snapshot, filter and sort, and
// puts the cursor back on its operation.
func (m *opsModel) rebuild() {
	m.setRows(m.orderSpec().build(&m.ctx.snap))
}

// orderSpec is everything the display order depends on besides the
// snapshot. frozen maps are replaced, never mutated, so a spec can be
// handed to a command.
type orderSpec struct {
	filter    model.FilterSpec
	sort      model.SortKey
	desc      bool
	frozenGen int // 0: not paused; else which frozen order applies
	frozen    map[string]int

	// Not part of the order: what buildRows also finds out.
	glyphs   Glyphs // the flag labels' width
	cursorID string // where the cursor is (setRows looks again if it moved)
}

// same reports whether two specs give the same order.
func (o orderSpec) same(p orderSpec) bool {
	return o.filter == p.filter && o.sort == p.sort && o.desc == p.desc && o.frozenGen == p.frozenGen
}

func (m *opsModel) orderSpec() orderSpec {
	o := orderSpec{filter: m.filter, sort: m.sort, desc: m.desc, glyphs: m.ctx.glyphs, cursorID: m.cursorID}
	if m.paused {
		o.frozenGen, o.frozen = m.frozenGen, m.frozen
	}
	return o
}

func (o orderSpec) build(s *model.Snapshot) rowOrder {
	f := o.filter
	f.Listing = s.Workspace.Listing // wh: matches names too
	return buildRows(s.Operations, s.Ordered(), f, s.GeneratedAt, o.sort, o.desc, o.frozen, o.glyphs, o.cursorID)
}

// setRows takes a display order built for the current snapshot: what
// buildRows found is used as it is, without another pass over the
// views (only a cursor moved since the order was built is looked up
// again).
func (m *opsModel) setRows(o rowOrder) {
	m.rows, m.flagW, m.flaggedAt, m.doneHidden = o.rows, o.flagW, o.flaggedAt, o.doneHidden
	if o.cursorID != m.cursorID {
		o.cursorOp, o.cursorRow = m.locate(m.cursorID)
	}
	m.cursorRow = o.cursorRow
	m.syncCursor(o.cursorOp)
}

// locate finds the operation with id in the snapshot (findOp) and its
// row: -1 for either when there is none.
func (m *opsModel) locate(id string) (op, row int) {
	op = findOp(m.ctx.snap.Operations, id)
	return op, slices.Index(m.rows, op) // rows hold no -1
}

// syncCursor keeps the cursor on its operation (at index op of the
// snapshot, -1: not there). If that operation left the table it says why
// (gone, hidden or collapsed) instead of silently selecting another row;
// the first snapshot selects the first row.
func (m *opsModel) syncCursor(op int) {
	ops := m.ctx.snap.Operations
	if m.cursorID == "" || !m.chosen {
		// Not picked by the operator: the top row.
		m.cursorID, m.cursorIdx, m.cursorRow, m.missing = "", 0, -1, present
		if len(m.rows) > 0 {
			m.cursorID = ops[m.rows[0]].StatementID
			m.cursorRow = 0
		}
		m.ensureVisible()
		return
	}
	if i := m.cursorRow; i >= 0 {
		m.cursorIdx = i
		k := present
		if ops[m.rows[i]].Gone {
			k = gone
		}
		m.setMissing(k)
		m.ensureVisible()
		return
	}
	k := gone
	if op >= 0 && !ops[op].Gone {
		k = hidden
		if m.filter.HideDone && ops[op].Done() {
			k = collapsed
		}
	}
	m.setMissing(k)
	m.cursorIdx = min(m.cursorIdx, max(0, len(m.rows)-1))
}

// setMissing records why the cursor's operation is not on screen, and
// when that changed (the status line shows the newer of it and the last
// action's status).
func (m *opsModel) setMissing(k missingKind) {
	if k != m.missing {
		m.ctx.seq++
		m.missingSeq = m.ctx.seq
	}
	m.missing = k
}

// selected is the operation under the cursor, or nil when it is not on
// screen.
func (m *opsModel) selected() *model.OperationView {
	i := m.cursorRow
	if i < 0 || m.cursorID == "" {
		return nil
	}
	return m.ctx.snap.Operations[m.rows[i]]
}

// find is the snapshot's operation with that id, listed or not.
func (m *opsModel) find(id string) *model.OperationView {
	ops := m.ctx.snap.Operations
	for i := range ops {
		if ops[i].StatementID == id {
			return ops[i]
		}
	}
	return nil
}

// moveCursor moves by delta rows; when the cursor's operation is missing
// it resumes at the row where that operation was.
func (m *opsModel) moveCursor(delta int) {
	i := m.cursorIdx
	if m.cursorRow >= 0 {
		i += delta
	} else if delta < 0 {
		i-- // the row at cursorIdx is the one after the missing operation
	}
	m.moveTo(i)
}

// moveTo puts the cursor on row i (clamped), whatever it was on: g and G
// are absolute, even when the filter hides the cursor's operation.
func (m *opsModel) moveTo(i int) {
	if len(m.rows) == 0 {
		return
	}
	ops := m.ctx.snap.Operations
	i = max(0, min(i, len(m.rows)-1))
	m.chosen = true
	m.cursorIdx, m.cursorRow = i, i
	m.cursorID = ops[m.rows[i]].StatementID
	k := present
	if ops[m.rows[i]].Gone {
		k = gone
	}
	m.setMissing(k)
	m.ensureVisible()
}

// tableRows is how many operation rows fit on screen.
func (m *opsModel) tableRows() int {
	return max(1, m.height-1) // minus the column header
}

// scrollToCursor puts the cursor's row at the top of the table (or as
// near as the end allows): a dialog then has the rest of the body
// without covering it.
func (m *opsModel) scrollToCursor() {
	if m.cursorRow >= 0 {
		m.offset = m.cursorIdx
		m.ensureVisible()
	}
}

// tailLines is 1 when the "+N finished and closed" line follows the
// last row: it scrolls like a row, so the last row is never drawn under
// it and the cursor never sits on a row it hides.
func (m *opsModel) tailLines() int {
	if m.doneHidden > 0 && len(m.rows) > 0 {
		return 1
	}
	return 0
}

// ensureVisible scrolls so that the cursor's row is drawn; on the last
// row it also shows the collapsed line below it.
func (m *opsModel) ensureVisible() {
	n := m.tableRows()
	if m.cursorIdx < m.offset {
		m.offset = m.cursorIdx
	}
	if m.cursorIdx >= m.offset+n {
		m.offset = m.cursorIdx - n + 1
	}
	last := len(m.rows) + m.tailLines() - n
	if m.cursorIdx == len(m.rows)-1 {
		m.offset = max(m.offset, last)
	}
	m.offset = max(0, min(m.offset, last))
}

// setPaused freezes (or releases) the row order.
func (m *opsModel) setPaused(p bool) {
	m.paused = p
	m.frozen = nil
	if p {
		m.freeze()
	}
	m.rebuild()
}

// freeze records the current display order.
func (m *opsModel) freeze() {
	m.frozenGen++
	m.frozen = make(map[string]int, len(m.rows))
	for i, r := range m.rows {
		m.frozen[m.ctx.snap.Operations[r].StatementID] = i
	}
}

// flaggedBelow counts flagged rows under the visible window: a sort that
// puts them there must say so.
func (m *opsModel) flaggedBelow() int {
	end := m.offset + m.tableRows()
	return len(m.flaggedAt) - sort.SearchInts(m.flaggedAt, end)
}
