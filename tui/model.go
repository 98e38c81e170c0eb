package tui

import (
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/keymap"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// viewID is one of the tab views.
type viewID int

const (
	viewOps viewID = iota
	viewEndpoints
	viewEvents
	viewHelp
	numViews
)

var viewNames = [numViews]string{"Operations", "Endpoints", "Events", "Help"}

// Smallest usable terminal; below it the screen says so.
const (
	minWidth  = 80
	minHeight = 24
)

// programContext is shared by every view: size, styles, glyphs, keys and
// options, built once.
type programContext struct {
	width, height int
	styles        Styles
	glyphs        Glyphs
	keys          keymap.KeyMap
	opts          Options
	readOnly      bool
}

// Model is the root Bubble Tea model. One struct keeps the state; views
// are methods that render slices of it.
type Model struct {
	ctx    *programContext
	eng    Engine
	events <-chan model.Event
	done   <-chan struct{} // closed by Run when the program ends

	view         viewID
	detail       bool // operation detail open (over the Operations view)
	detailScroll int

	snap    model.Snapshot
	health  poller.Health
	loaded  bool
	counts  flagCounts
	refresh int // snapshots applied, for tests and the paused badge

	// rows are indices into snap.Operations in display order; rowPos maps
	// a statement id to its display index. Both are rebuilt per snapshot,
	// sort or filter change, never per frame.
	rows   []int
	rowPos map[string]int

	// The cursor is an operation, not a row number: cursorID survives
	// every refresh, sort and filter change. cursorIdx is where it was
	// last seen, so j/k can resume nearby once it is gone.
	cursorID  string
	cursorIdx int
	offset    int
	missing   missingKind

	sort        sortKey
	desc        bool
	filter      rowFilter
	filterInput lineInput
	filtering   bool
	paused      bool
	frozen      map[string]int // replaced, never mutated: commands read it
	frozenGen   int

	confirm *pendingAction
	busy    map[string]string       // statement id → "closing…" while an action runs
	results map[string]actionResult // statement id → last action result, shown in the row for a while

	ring     *ring
	evOffset int

	epCursor   int
	epExpanded map[string]bool
	epOffset   int

	status     string
	statusCrit bool
}

// missingKind says why the cursor's operation is not on screen.
type missingKind int

const (
	present missingKind = iota
	gone                // the server no longer has it (closed or reaped)
	hidden              // the filter hides it
)

// New returns the root model on e. It takes a first snapshot when the
// program starts and then one per Options.Refresh.
func New(e Engine, o Options) tea.Model {
	return newModel(e, o)
}

func newModel(e Engine, o Options) *Model {
	o = o.withDefaults()
	g := unicodeGlyphs
	if o.ASCII {
		g = asciiGlyphs
	}
	ro := o.ReadOnly || e.ReadOnly()
	k := keymap.DefaultKeyMap()
	k.SetReadOnly(ro)
	ctx := &programContext{
		styles:   newStyles(newRenderer(o), g),
		glyphs:   g,
		keys:     k,
		opts:     o,
		readOnly: ro,
	}
	return &Model{
		ctx:        ctx,
		eng:        e,
		events:     e.Events(),
		desc:       true, // most severe first
		busy:       map[string]string{},
		results:    map[string]actionResult{},
		ring:       newRing(eventRing),
		epExpanded: map[string]bool{},
		rowPos:     map[string]int{},
	}
}

// Init takes the first snapshot and starts listening for engine events.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.fetch(), waitEvent(m.events, m.done))
}

// Update routes messages; keys go to handleKey.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.ctx.width, m.ctx.height = msg.Width, msg.Height
		m.ensureVisible()
		return m, nil
	case snapMsg:
		if msg.order.same(m.orderSpec()) {
			m.applySnapshotRows(msg.snap, msg.health, msg.rows)
		} else {
			m.applySnapshot(msg.snap, msg.health)
		}
		return m, m.tick()
	case tickMsg:
		return m, m.fetch()
	case eventMsg:
		if !msg.ok {
			return m, nil // the engine closed its channel: it stopped
		}
		m.ring.push(msg.ev)
		return m, waitEvent(m.events, m.done)
	case actionDoneMsg:
		m.actionDone(msg)
		return m, nil
	case exportDoneMsg:
		m.exportDone(msg)
		return m, nil
	case copyDoneMsg:
		m.copyDone(msg)
		return m, nil
	case tea.KeyMsg:
		return m.handleKey(msg)
	}
	return m, nil
}

// applySnapshot takes a new snapshot and rebuilds the row order; paused,
// the order stays frozen while the values update.
func (m *Model) applySnapshot(s model.Snapshot, h poller.Health) {
	m.applySnapshotRows(s, h, m.orderSpec().build(s.Operations))
}

// applySnapshotRows takes a snapshot whose display order is already
// computed for the current orderSpec.
func (m *Model) applySnapshotRows(s model.Snapshot, h poller.Health, rows []int) {
	h.LastError = model.SanitizeError(h.LastError) // the snapshot is clean, health is not
	m.snap, m.health, m.loaded = s, h, true
	m.refresh++
	m.counts = countFlags(&m.snap)
	m.setRows(rows)
	if m.epCursor >= len(m.snap.Endpoints) {
		m.epCursor = max(0, len(m.snap.Endpoints)-1)
	}
}

// rebuild recomputes rows for the current snapshot, filter and sort, and
// puts the cursor back on its operation.
func (m *Model) rebuild() {
	m.setRows(m.orderSpec().build(m.snap.Operations))
}

// orderSpec is everything the display order depends on besides the
// snapshot. frozen maps are replaced, never mutated, so a spec can be
// handed to a command.
type orderSpec struct {
	filter    rowFilter
	sort      sortKey
	desc      bool
	frozenGen int // 0: not paused; else which frozen order applies
	frozen    map[string]int
}

// same reports whether two specs give the same order.
func (o orderSpec) same(p orderSpec) bool {
	return o.filter == p.filter && o.sort == p.sort && o.desc == p.desc && o.frozenGen == p.frozenGen
}

func (m *Model) orderSpec() orderSpec {
	o := orderSpec{filter: m.filter, sort: m.sort, desc: m.desc}
	if m.paused {
		o.frozenGen, o.frozen = m.frozenGen, m.frozen
	}
	return o
}

func (o orderSpec) build(ops []model.OperationView) []int {
	return buildRows(ops, o.filter, o.sort, o.desc, o.frozen)
}

func (m *Model) setRows(rows []int) {
	ops := m.snap.Operations
	m.rows = rows
	clear(m.rowPos)
	for i, r := range m.rows {
		m.rowPos[ops[r].StatementID] = i
	}
	m.syncCursor()
}

// syncCursor keeps the cursor on its operation. If that operation left the
// table it says why (gone or hidden) instead of silently selecting
// another row; the first snapshot selects the first row.
func (m *Model) syncCursor() {
	if m.cursorID == "" {
		if len(m.rows) > 0 {
			m.cursorID = m.snap.Operations[m.rows[0]].StatementID
			m.cursorIdx, m.missing = 0, present
		}
		m.ensureVisible()
		return
	}
	if i, ok := m.rowPos[m.cursorID]; ok {
		m.cursorIdx = i
		m.missing = present
		if m.snap.Operations[m.rows[i]].Gone {
			m.missing = gone
		}
		m.ensureVisible()
		return
	}
	m.missing = gone
	for i := range m.snap.Operations {
		if op := &m.snap.Operations[i]; op.StatementID == m.cursorID && !op.Gone {
			m.missing = hidden
			break
		}
	}
	m.cursorIdx = min(m.cursorIdx, max(0, len(m.rows)-1))
}

// selected is the operation under the cursor, or nil when it is not on
// screen.
func (m *Model) selected() *model.OperationView {
	i, ok := m.rowPos[m.cursorID]
	if !ok || m.cursorID == "" {
		return nil
	}
	return &m.snap.Operations[m.rows[i]]
}

// moveCursor moves by delta rows; when the cursor's operation is missing
// it resumes at the row where that operation was.
func (m *Model) moveCursor(delta int) {
	if len(m.rows) == 0 {
		return
	}
	i := m.cursorIdx
	if _, ok := m.rowPos[m.cursorID]; ok {
		i += delta
	} else if delta < 0 {
		i-- // the row at cursorIdx is the one after the missing operation
	}
	i = max(0, min(i, len(m.rows)-1))
	m.cursorIdx = i
	m.cursorID = m.snap.Operations[m.rows[i]].StatementID
	m.missing = present
	if m.snap.Operations[m.rows[i]].Gone {
		m.missing = gone
	}
	m.ensureVisible()
}

// tableRows is how many operation rows fit on screen.
func (m *Model) tableRows() int {
	return max(1, m.bodyHeight()-1) // minus the column header
}

func (m *Model) ensureVisible() {
	n := m.tableRows()
	if m.cursorIdx < m.offset {
		m.offset = m.cursorIdx
	}
	if m.cursorIdx >= m.offset+n {
		m.offset = m.cursorIdx - n + 1
	}
	m.offset = max(0, min(m.offset, len(m.rows)-n))
}

// setPaused freezes (or releases) the row order.
func (m *Model) setPaused(p bool) {
	m.paused = p
	m.frozen = nil
	if p {
		m.freeze()
	}
	m.rebuild()
}

// freeze records the current display order.
func (m *Model) freeze() {
	m.frozenGen++
	m.frozen = make(map[string]int, len(m.rows))
	for i, r := range m.rows {
		m.frozen[m.snap.Operations[r].StatementID] = i
	}
}

// flagCounts are the header's per-flag counts.
type flagCounts struct {
	ops, running, flagged int
	warn, crit            map[model.FlagKind]int // operations and endpoints
}

func countFlags(s *model.Snapshot) flagCounts {
	c := flagCounts{warn: map[model.FlagKind]int{}, crit: map[model.FlagKind]int{}}
	c.ops = len(s.Operations)
	for i := range s.Operations {
		op := &s.Operations[i]
		if op.State.Live() && !op.Gone {
			c.running++
		}
		if len(op.Flags) > 0 {
			c.flagged++
		}
		for _, f := range op.Flags {
			if f.Severity == model.SeverityCritical {
				c.crit[f.Kind]++
			} else {
				c.warn[f.Kind]++
			}
		}
	}
	for i := range s.Endpoints {
		for _, f := range s.Endpoints[i].Flags {
			if f.Severity == model.SeverityCritical {
				c.crit[f.Kind]++
			} else {
				c.warn[f.Kind]++
			}
		}
	}
	return c
}
