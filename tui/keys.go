package tui

import (
	"fmt"
	"github.com/dbxtop/dbxtop/model"
	"slices"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// handleKey is the one place keys are routed. Order matters: an open
// confirmation swallows every key; a view reading text (the `/` prompt)
// gets every key but ctrl+c; several runes in one message (fast typing,
// paste, a slow link) are that many presses; then the program's keys,
// the row actions, and finally the current view's own keys.
func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	if msg.Alt {
		// No binding uses alt: an "alt+key" is Esc and a key that came
		// in one read (Esc then Tab on a slow link), so it is both.
		first := m.handleKey(tea.KeyMsg{Type: tea.KeyEsc})
		msg.Alt = false
		return tea.Batch(first, m.handleKey(msg))
	}
	if m.confirm != nil {
		return m.answerConfirm(msg)
	}
	cur := m.current()
	if c, ok := cur.(capturer); ok && c.Capturing() {
		if msg.Type == tea.KeyCtrlC {
			return tea.Quit
		}
		return cur.Update(msg)
	}
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 {
		var cmds []tea.Cmd
		for i, r := range msg.Runes {
			cmds = append(cmds, m.handleKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
			if c, ok := m.current().(capturer); ok && c.Capturing() {
				// A `/` inside the burst opened a prompt: the rest is its text.
				if rest := msg.Runes[i+1:]; len(rest) > 0 {
					cmds = append(cmds, m.current().Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: rest}))
				}
				break
			}
		}
		return tea.Batch(cmds...)
	}
	if cmd, done := m.programKey(msg); done {
		return cmd
	}
	if m.drillKey(msg) {
		return nil
	}
	if m.view == viewOps {
		if cmd, done := m.opsKey(msg); done {
			return cmd
		}
	}
	return cur.Update(msg)
}

// programKey handles the keys that work in every view.
func (m *Model) programKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := &m.ctx.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit, true
	case key.Matches(msg, k.Suspend):
		return tea.Suspend, true
	case key.Matches(msg, k.NextView):
		m.switchView(1)
	case key.Matches(msg, k.PrevView):
		m.switchView(-1)
	case key.Matches(msg, k.Help):
		m.toggleHelp()
	case key.Matches(msg, k.Export):
		return m.export(), true
	case key.Matches(msg, k.LastErr):
		m.showLastError()
	case key.Matches(msg, k.Faster):
		m.stepRefresh(-1)
	case key.Matches(msg, k.Slower):
		m.stepRefresh(1)
	case m.view == viewHelp && key.Matches(msg, k.Back):
		m.toggleHelp()
	default:
		return nil, false
	}
	return nil, true
}

// drillKey handles enter on a Clients or Warehouses row (Operations
// filtered to it) and esc back from such a drill-down.
func (m *Model) drillKey(msg tea.KeyMsg) bool {
	k := &m.ctx.keys
	switch {
	case m.view == viewClients && key.Matches(msg, k.DrillDown):
		m.drillClient()
	case m.view == viewWarehouses && key.Matches(msg, k.DrillWarehouse):
		if w := m.whs.selected(); w != nil {
			m.drillTo("wh:"+model.QuoteFilterValue(w.info.ID), viewWarehouses)
		}
	case m.view == viewOps && !m.detailOpen && m.drillFrom >= 0 && key.Matches(msg, k.Back):
		// Back where the drill-down started, the filter it set cleared.
		m.ops.setFilterText("")
		m.view, m.drillFrom = m.drillFrom, -1
	default:
		return false
	}
	return true
}

// opsKey handles the Operations view's root keys: the detail and the
// row actions (shared with the detail view).
func (m *Model) opsKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := &m.ctx.keys
	if m.detailOpen && (key.Matches(msg, k.Back) || key.Matches(msg, k.Detail)) {
		m.detailOpen = false
		return nil, true
	}
	if !m.detailOpen && key.Matches(msg, k.Detail) {
		if m.selected() != nil {
			m.detailOpen, m.detail.scroll = true, 0
			m.ops.chosen = true // the detail stays on this operation
		}
		return nil, true
	}
	if cmd, done := m.rowAction(msg); done {
		if m.selected() != nil {
			m.ops.chosen = true // acted on: it is the operator's now
		}
		return cmd, true
	}
	return nil, false
}

// drillClient opens Operations filtered to the selected client
// application and user; esc there returns to Clients.
func (m *Model) drillClient() {
	c := m.clients.selected()
	if c == nil {
		m.ctx.setStatus("no client selected", false)
		return
	}
	f := "client:" + model.QuoteFilterValue(c.ClientApplication)
	if c.User != "" {
		f += " user:" + model.QuoteFilterValue(c.User)
	}
	m.drillTo(f, viewClients)
}

// drillTo opens Operations with filter f; esc there returns to from.
func (m *Model) drillTo(f string, from viewID) {
	m.ops.setFilterText(f)
	m.ops.moveTo(0)
	m.detailOpen, m.view, m.drillFrom = false, viewOps, from
}

func (m *Model) switchView(d int) {
	m.detailOpen, m.drillFrom = false, -1
	m.view = (m.view + viewID(d) + numViews) % numViews
}

// toggleHelp opens Help over the current view, or returns to it.
func (m *Model) toggleHelp() {
	if m.view == viewHelp {
		m.view = m.help.from
		return
	}
	m.help.from, m.help.scroll = m.view, 0
	m.view = viewHelp
}

// rowAction handles the keys that act on the selected operation; shared
// by the table and the detail view. In read-only mode the mutating keys
// are disabled, and pressing one says so instead of doing nothing.
func (m *Model) rowAction(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := &m.ctx.keys
	switch {
	case key.Matches(msg, k.Adopt):
		m.askConfirm(actAdopt)
	case key.Matches(msg, k.Close):
		m.askConfirm(actClose)
	case key.Matches(msg, k.Cancel):
		m.askConfirm(actCancel)
	case key.Matches(msg, k.CloseSet) && !m.detailOpen:
		m.askSet(actClose)
	case key.Matches(msg, k.CancelSet) && !m.detailOpen:
		m.askSet(actCancel)
	case key.Matches(msg, k.CopyID):
		if op := m.selected(); op != nil {
			return m.copy("id", op.StatementID), true
		}
		m.ctx.setStatus("no operation selected: nothing to copy", false)
	case key.Matches(msg, k.CopySQL):
		if op := m.selected(); op != nil {
			return m.copy("SQL", op.SQL), true
		}
		m.ctx.setStatus("no operation selected: nothing to copy", false)
	default:
		if what, ok := m.refused(msg); ok {
			m.ctx.setStatus(fmt.Sprintf("read-only: %s refused (dbxtop was started with --read-only)", what), true)
			return nil, true
		}
		return nil, false
	}
	return nil, true
}

// refused names the mutating action a key would run, when read-only mode
// disabled it.
func (m *Model) refused(msg tea.KeyMsg) (string, bool) {
	if !m.ctx.readOnly {
		return "", false
	}
	k := &m.ctx.keys
	for _, a := range []struct {
		b    key.Binding
		what string
	}{{k.Adopt, "adopt"}, {k.Close, "re-close"}, {k.Cancel, "cancel"}, {k.CloseSet, "re-close of the set"}, {k.CancelSet, "cancel of the set"}} {
		if slices.Contains(a.b.Keys(), msg.String()) {
			return a.what, true
		}
	}
	return "", false
}

// enabledKeys drops disabled bindings so help never advertises a key that
// does nothing.
func enabledKeys(bs ...key.Binding) []key.Binding {
	out := make([]key.Binding, 0, len(bs))
	for _, b := range bs {
		if b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}

// showLastError opens the Events view on the last error's call: its
// give-up events carry the whole error, request id on a line of its own.
func (m *Model) showLastError() {
	e := m.ctx.health.LastError
	if e == nil {
		m.ctx.setStatus("no error so far", false)
		return
	}
	m.detailOpen, m.view = false, viewEvents
	m.evs.box.set(e.Call)
	m.evs.offset = 0
	// Newer events of the same call (flags raised since) come first:
	// scroll to the give-up that carries this error, the newest one of
	// its call, request id first when it has one.
	evs, at := m.evs.matching(), -1
	for i, ev := range evs {
		call := ev.Call
		if call == "" && ev.Err != nil {
			call = ev.Err.Call
		}
		if ev.Kind != model.EventGiveUp || call != e.Call {
			continue
		}
		if at < 0 {
			at = i
		}
		if e.RequestID != "" && ev.AnyRequestID() == e.RequestID {
			at = i
			break
		}
	}
	if at < 0 {
		m.ctx.setStatus("the give-up of "+e.Call+" has left the event list; its events are shown", false)
		return
	}
	m.evs.offset, m.evs.full = at, true
}

// refreshSteps are the screen refresh periods + and - step through.
var refreshSteps = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}

// RefreshSetter is what an engine that polls for itself offers: its
// discovery and capacity period, which + and - change at run time
// (*poller.Engine and the fleet do; an attached serve keeps its own
// --refresh, so there + and - change only how often the screen reads it).
type RefreshSetter interface {
	Refresh() time.Duration
	SetRefresh(time.Duration)
}

// engineRefreshSteps are the data refresh periods + and - step through
// when the engine polls for itself: no faster than a second, as each
// round lists every watched warehouse's operations.
var engineRefreshSteps = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute}

// stepDuration moves d steps (-1: shorter) from cur within steps; a cur
// between two steps moves to the nearer one in d's direction.
func stepDuration(steps []time.Duration, cur time.Duration, d int) time.Duration {
	i := 0
	for i < len(steps)-1 && steps[i] < cur {
		i++
	}
	if d > 0 && steps[i] > cur {
		i-- // between two steps: slower is the step above, found next
	}
	return steps[max(0, min(len(steps)-1, i+d))]
}

// stepRefresh moves the refresh period d steps (-1: more often): the
// engine's own when it polls for itself (the screen then reads at least
// as often as it did), else the screen's; the next tick uses it.
func (m *Model) stepRefresh(d int) {
	if rs, ok := m.eng.(RefreshSetter); ok {
		cur := rs.Refresh()
		lo, hi := engineRefreshSteps[0], engineRefreshSteps[len(engineRefreshSteps)-1]
		next := stepDuration(engineRefreshSteps, cur, d)
		if next == cur {
			m.ctx.setStatus(fmt.Sprintf("refresh stays %s (from %s to %s)", cur, lo, hi), false)
			return
		}
		rs.SetRefresh(next)
		m.ctx.screenEvery = min(next, m.ctx.opts.Refresh)
		m.ctx.setStatus(fmt.Sprintf("refresh %s (+ more often, - less often; %s to %s)", next, lo, hi), false)
		return
	}
	cur := m.ctx.screenRefresh()
	lo, hi := refreshSteps[0], refreshSteps[len(refreshSteps)-1]
	next := stepDuration(refreshSteps, cur, d)
	if next == cur {
		m.ctx.setStatus(fmt.Sprintf("screen refresh stays %s (from %s to %s)", cur, lo, hi), false)
		return
	}
	m.ctx.screenEvery = next
	m.ctx.setStatus(fmt.Sprintf("screen refresh %s (+ more often, - less often; %s to %s)", next, lo, hi), false)
}
