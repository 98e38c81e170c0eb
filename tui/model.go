package tui

import (
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/keymap"
	"github.com/dbxtop/dbxtop/model"
)

// viewID is one of the tab views.
type viewID int

const (
	viewOps viewID = iota
	viewEndpoints
	viewEvents
	viewClients
	viewWarehouses
	viewHelp
	numViews
)

var viewNames = [numViews]string{"Operations", "Endpoints", "Events", "Clients", "Warehouses", "Help"}

// shortViewNames are the idle tabs below 100 columns.
var shortViewNames = [numViews]string{"Ops", "Endp", "Events", "Clients", "Whs", "Help"}

// Smallest usable terminal; below it the screen says so. 80×23 is an
// 80×24 tmux window under its status bar; below 80 columns the views drop
// columns in their documented order (docs/operator-guide.md, "Small
// terminals").
const (
	minWidth  = 60
	minHeight = 20
)

// Model is the root Bubble Tea model. It routes messages to the current
// view's component, applies snapshots and events to the shared context,
// runs the confirmed actions, and draws the frame (header, body, status
// line, footer) around the component's body.
type Model struct {
	ctx    *programContext
	eng    Engine
	events <-chan model.Event
	done   <-chan struct{} // closed by Run when the program ends

	view       viewID
	detailOpen bool // operation detail open over the Operations view
	// drillFrom is the view a drill-down came from (esc returns to it),
	// -1 when Operations was not opened by one.
	drillFrom viewID

	ops       *opsModel
	detail    *detailModel
	endpoints *endpointsModel
	evs       *eventsModel
	help      *helpModel
	clients   *clientsModel
	whs       *warehousesModel

	counts  flagCounts
	sized   [2]int // the body size the views were last given (resize)
	refresh int    // snapshots applied, for tests and the paused badge
	confirm *pendingAction
	lastErr lastErrorState
}

// lastErrorState ages the header's last error and notices recovery: the
// engine keeps the last workspace error until another replaces it, and
// lists in the snapshot only the calls that are failing now.
type lastErrorState struct {
	key       string    // identity of the error shown
	since     time.Time // when the TUI first saw it
	recovered time.Time // when its call was first seen succeeding again
	// sawFailing: the call was seen failing, so its absence later is a
	// recovery (an error already over when dbxtop first looked is not).
	sawFailing bool
	// What the last snapshot's health said, to notice a new failure of
	// the same error.
	giveUps, discFails int64
	requestID          string
}

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
		styles:   newStyles(newRenderer(o), g, o.Colors),
		glyphs:   g,
		keys:     k,
		opts:     o,
		readOnly: ro,
		started:  o.Now(),
		ring:     newRing(eventRing),
		busy:     map[string]string{},
		results:  map[string]actionResult{},
	}
	ops := newOpsModel(ctx)
	if k, err := model.ParseSortKey(o.Sort); err == nil {
		ops.sort = k
	}
	start := viewOps
	for v, name := range viewNames {
		if strings.EqualFold(name, o.View) && viewID(v) != viewHelp {
			start = viewID(v)
		}
	}
	return &Model{
		drillFrom: -1,
		view:      start,
		ctx:       ctx,
		eng:       e,
		events:    e.Events(),
		ops:       ops,
		detail:    &detailModel{ctx: ctx, ops: ops},
		endpoints: newEndpointsModel(ctx),
		evs:       &eventsModel{ctx: ctx},
		help:      newHelpModel(ctx),
		clients:   &clientsModel{ctx: ctx},
		whs:       &warehousesModel{ctx: ctx},
	}
}

// current is the component that gets keys and draws the body.
func (m *Model) current() component {
	switch m.view {
	case viewEndpoints:
		return m.endpoints
	case viewEvents:
		return m.evs
	case viewClients:
		return m.clients
	case viewWarehouses:
		return m.whs
	case viewHelp:
		return m.help
	}
	if m.detailOpen {
		return m.detail
	}
	return m.ops
}

// Init takes the first snapshot and starts listening for engine events.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.fetch(), waitEvent(m.events, m.done))
}

// Update routes a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	return m, m.route(msg)
}

// View renders the frame from the current state (it never changes it).
func (m *Model) View() string { return m.render() }

// route handles one message; keys go to handleKey.
func (m *Model) route(msg tea.Msg) tea.Cmd { return m.routeMsg(msg) }

func (m *Model) routeMsg(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.ctx.width, m.ctx.height = msg.Width, msg.Height
		m.resize()
		return nil
	case snapMsg:
		if msg.order.same(m.ops.orderSpec()) {
			m.applySnapshotRows(msg.snap, msg.health, msg.rows)
		} else {
			m.applySnapshot(msg.snap, msg.health)
		}
		m.endpoints.Update(msg)
		m.clients.Update(msg)
		m.whs.Update(msg)
		return m.tick()
	case tickMsg:
		return m.fetch()
	case eventMsg:
		if !msg.ok {
			return nil // the engine closed its channel: it stopped
		}
		for _, ev := range msg.evs {
			m.ctx.ring.push(ev)
		}
		return waitEvent(m.events, m.done)
	case actionDoneMsg:
		m.actionDone(msg)
		return nil
	case setProgressMsg:
		return m.setProgress(msg)
	case exportDoneMsg:
		m.exportDone(msg)
		return nil
	case copyDoneMsg:
		m.copyDone(msg)
		return nil
	case tea.MouseMsg:
		return m.mouse(msg)
	case tea.KeyMsg:
		return m.handleKey(msg)
	}
	return nil
}

// applySnapshot takes a new snapshot and rebuilds the row order; paused,
// the order stays frozen while the values update.
func (m *Model) applySnapshot(s model.Snapshot, h model.Health) {
	m.applySnapshotRows(s, h, m.ops.orderSpec().build(&s))
}

// applySnapshotRows takes a snapshot whose display order is already
// computed for the current orderSpec.
func (m *Model) applySnapshotRows(s model.Snapshot, h model.Health, rows rowOrder) {
	h.LastError = model.SanitizeError(h.LastError) // the snapshot is clean, health is not
	m.ctx.snap, m.ctx.health, m.ctx.loaded = s, h, true
	m.refresh++
	m.counts = rows.counts // buildRows counted the operations
	for i := range s.Endpoints {
		m.counts.add(s.Endpoints[i].Flags)
	}
	m.ctx.frozen = frozen(m.ctx)
	m.trackLastError()
	m.resize()
	m.ops.setRows(rows)
}

// trackLastError notes when the header's last error first appeared and
// when its call stopped failing.
func (m *Model) trackLastError() {
	e, now := m.ctx.health.LastError, m.ctx.opts.Now()
	if e == nil {
		m.lastErr = lastErrorState{}
		return
	}
	k := e.Call + "\x00" + e.Message + "\x00" + e.ErrorCode // not the request id: each retry has its own
	// The age counts from the latest failure: the same error failing again
	// (another give-up, another failed listing round, another request id)
	// restarts it.
	h := &m.ctx.health
	again := h.GiveUps > m.lastErr.giveUps || h.DiscoveryFailures > m.lastErr.discFails ||
		(e.RequestID != "" && e.RequestID != m.lastErr.requestID)
	if k != m.lastErr.key {
		m.lastErr = lastErrorState{key: k, since: now}
	} else if again {
		m.lastErr.since, m.lastErr.recovered = now, time.Time{}
	}
	m.lastErr.giveUps, m.lastErr.discFails, m.lastErr.requestID = h.GiveUps, h.DiscoveryFailures, e.RequestID
	failing := false
	for i := range m.ctx.snap.Errors {
		if m.ctx.snap.Errors[i].Call == e.Call {
			failing = true
		}
	}
	switch {
	case failing:
		m.lastErr.recovered, m.lastErr.sawFailing = time.Time{}, true
	case m.lastErr.recovered.IsZero():
		m.lastErr.recovered = now
	}
}

// flagCounts are the header's per-flag counts.
type flagCounts struct {
	ops, running, flagged int
	warn, crit            map[model.FlagKind]int // operations and endpoints
}

func newFlagCounts() flagCounts {
	return flagCounts{warn: map[model.FlagKind]int{}, crit: map[model.FlagKind]int{}}
}

// add counts flags by kind and severity.
func (c *flagCounts) add(fs []model.Flag) {
	for _, f := range fs {
		if f.Severity == model.SeverityCritical {
			c.crit[f.Kind]++
		} else {
			c.warn[f.Kind]++
		}
	}
}

// selected is the operation under the Operations cursor, or nil.
func (m *Model) selected() *model.OperationView { return m.ops.selected() }
