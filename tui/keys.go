package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// handleKey is the one place keys are interpreted. Order matters: an open
// confirmation swallows every key, then the filter input, then global
// keys, then the current view's keys.
func (m *Model) handleKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := &m.ctx.keys
	if m.confirm != nil {
		return m, m.answerConfirm(msg)
	}
	if m.filtering {
		return m, m.filterKey(msg)
	}
	switch {
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.NextView):
		m.switchView(1)
		return m, nil
	case key.Matches(msg, k.PrevView):
		m.switchView(-1)
		return m, nil
	case key.Matches(msg, k.Help):
		if m.view == viewHelp {
			m.view = viewOps
		} else {
			m.view, m.detail = viewHelp, false
		}
		return m, nil
	case key.Matches(msg, k.Export):
		return m, m.export()
	}
	switch m.view {
	case viewOps:
		if m.detail {
			return m, m.detailKey(msg)
		}
		return m, m.opsKey(msg)
	case viewEndpoints:
		m.endpointsKey(msg)
	case viewEvents:
		m.eventsKey(msg)
	case viewHelp:
		if key.Matches(msg, k.Back) {
			m.view = viewOps
		}
	}
	return m, nil
}

func (m *Model) switchView(d int) {
	m.detail = false
	m.view = (m.view + viewID(d) + numViews) % numViews
}

// opsKey handles the Operations table.
func (m *Model) opsKey(msg tea.KeyMsg) tea.Cmd {
	k := &m.ctx.keys
	switch {
	case key.Matches(msg, k.Up):
		m.moveCursor(-1)
	case key.Matches(msg, k.Down):
		m.moveCursor(1)
	case key.Matches(msg, k.PageUp):
		m.moveCursor(-m.tableRows())
	case key.Matches(msg, k.PageDown):
		m.moveCursor(m.tableRows())
	case key.Matches(msg, k.Top):
		m.moveCursor(-len(m.rows))
	case key.Matches(msg, k.Bottom):
		m.moveCursor(len(m.rows))
	case key.Matches(msg, k.Detail):
		if m.selected() != nil {
			m.detail, m.detailScroll = true, 0
		}
	case key.Matches(msg, k.Sort):
		m.sort = (m.sort + 1) % numSortKeys
		m.resort()
	case key.Matches(msg, k.SortReverse):
		m.desc = !m.desc
		m.resort()
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.filterInput.SetValue(m.filter.text)
	case key.Matches(msg, k.Back):
		if m.filter.text != "" {
			m.setFilterText("")
		}
	case key.Matches(msg, k.Flagged):
		m.filter.flaggedOnly = !m.filter.flaggedOnly
		m.rebuild()
	case key.Matches(msg, k.Pause):
		m.setPaused(!m.paused)
	default:
		return m.rowAction(msg)
	}
	return nil
}

// rowAction handles the keys that act on the selected operation; shared
// by the table and the detail view.
func (m *Model) rowAction(msg tea.KeyMsg) tea.Cmd {
	k := &m.ctx.keys
	switch {
	case key.Matches(msg, k.Adopt):
		m.askConfirm(actAdopt)
	case key.Matches(msg, k.Close):
		m.askConfirm(actClose)
	case key.Matches(msg, k.Cancel):
		m.askConfirm(actCancel)
	case key.Matches(msg, k.CopyID):
		if op := m.selected(); op != nil {
			return m.copy("id", op.StatementID)
		}
		m.setStatus("no operation selected: nothing to copy", false)
	case key.Matches(msg, k.CopySQL):
		if op := m.selected(); op != nil {
			return m.copy("SQL", op.SQL)
		}
		m.setStatus("no operation selected: nothing to copy", false)
	}
	return nil
}

// resort applies a new sort key or direction. While paused the operator
// asked for a new order explicitly, so it is frozen again in that order.
func (m *Model) resort() {
	if m.paused {
		m.paused = false
		m.rebuild()
		m.paused = true
		m.freeze()
	}
	m.rebuild()
}

// filterKey edits the filter; it applies as the operator types. enter
// keeps it, esc clears it.
func (m *Model) filterKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEsc:
		m.filtering = false
		m.setFilterText("")
		return nil
	case tea.KeyEnter:
		m.filtering = false
		return nil
	case tea.KeyCtrlC:
		return tea.Quit
	}
	if m.filterInput.update(msg) {
		m.setFilterText(m.filterInput.Value())
	}
	return nil
}

func (m *Model) setFilterText(s string) {
	m.filter.text = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		m.filterInput.SetValue("")
	}
	m.rebuild()
}

// detailKey handles the operation detail: scroll, close it, act on it.
func (m *Model) detailKey(msg tea.KeyMsg) tea.Cmd {
	k := &m.ctx.keys
	switch {
	case key.Matches(msg, k.Back), key.Matches(msg, k.Detail):
		m.detail = false
	case key.Matches(msg, k.Up):
		m.detailScroll = max(0, m.detailScroll-1)
	case key.Matches(msg, k.Down):
		m.detailScroll++
	case key.Matches(msg, k.PageUp):
		m.detailScroll = max(0, m.detailScroll-m.bodyHeight())
	case key.Matches(msg, k.PageDown):
		m.detailScroll += m.bodyHeight()
	default:
		return m.rowAction(msg)
	}
	return nil
}

// endpointsKey moves between endpoints and expands their indexes.
func (m *Model) endpointsKey(msg tea.KeyMsg) {
	k := &m.ctx.keys
	n := len(m.snap.Endpoints)
	switch {
	case key.Matches(msg, k.Up):
		m.epCursor = max(0, m.epCursor-1)
	case key.Matches(msg, k.Down):
		m.epCursor = max(0, min(n-1, m.epCursor+1))
	case key.Matches(msg, k.Top):
		m.epCursor = 0
	case key.Matches(msg, k.Bottom):
		m.epCursor = max(0, n-1)
	case key.Matches(msg, k.Detail):
		if m.epCursor < n {
			name := m.snap.Endpoints[m.epCursor].Name
			m.epExpanded[name] = !m.epExpanded[name]
		}
	}
}

// eventsKey scrolls the Events view.
func (m *Model) eventsKey(msg tea.KeyMsg) {
	k := &m.ctx.keys
	last := max(0, m.ring.len()-m.bodyHeight()+1)
	switch {
	case key.Matches(msg, k.Up):
		m.evOffset = max(0, m.evOffset-1)
	case key.Matches(msg, k.Down):
		m.evOffset = min(last, m.evOffset+1)
	case key.Matches(msg, k.PageUp):
		m.evOffset = max(0, m.evOffset-m.bodyHeight())
	case key.Matches(msg, k.PageDown):
		m.evOffset = min(last, m.evOffset+m.bodyHeight())
	case key.Matches(msg, k.Top):
		m.evOffset = 0
	case key.Matches(msg, k.Bottom):
		m.evOffset = last
	}
}

func (m *Model) setStatus(s string, crit bool) {
	m.status, m.statusCrit = s, crit
}
