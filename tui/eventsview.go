package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
)

// eventsModel lists engine and operator events, newest first: time, kind,
// operation (or endpoint), message and request id. A long message wraps
// onto at most eventLines lines so its request id stays readable. `/`
// filters by kind ("retry", "give-up"), target or message.
type eventsModel struct {
	ctx           *programContext
	width, height int
	offset        int // first matching event shown (0 = newest)
	box           filterBox
	// full: the top event (at offset) is shown whole, wrapped, not cut
	// at eventLines (enter toggles it; ! opens the last error so).
	full bool
}

func (m *eventsModel) SetSize(w, h int) { m.width, m.height = w, h }

func (m *eventsModel) Capturing() bool { return m.box.active }

func (m *eventsModel) ShortHelp() []key.Binding {
	k := &m.ctx.keys
	return []key.Binding{k.Expand, k.Filter, k.Down, k.Top}
}

func (m *eventsModel) FullHelp() [][]key.Binding {
	k := &m.ctx.keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Expand, k.Filter, k.Back}}
}

// matching are the ring's events the filter lets through, newest first.
func (m *eventsModel) matching() []model.Event {
	r := m.ctx.ring
	out := make([]model.Event, 0, r.len())
	for i := 0; i < r.len(); i++ {
		if e := r.at(i); m.match(e) {
			out = append(out, e)
		}
	}
	return out
}

func (m *eventsModel) match(e model.Event) bool {
	t := m.box.text
	return t == "" || containsFold(string(e.Kind), t) || containsFold(e.StatementID, t) ||
		containsFold(e.Endpoint, t) || containsFold(eventText(e), t)
}

func (m *eventsModel) Update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	if m.box.active {
		if m.box.key(km) {
			m.offset = 0
		}
		return nil
	}
	k := &m.ctx.keys
	last := max(0, len(m.matching())-m.height+1)
	if key.Matches(km, k.Expand) {
		m.full = !m.full
		return nil
	}
	m.full = false // the top event changes: it is shown like the others
	switch {
	case key.Matches(km, k.Up):
		m.offset--
	case key.Matches(km, k.Down):
		m.offset++
	case key.Matches(km, k.PageUp):
		m.offset -= m.height
	case key.Matches(km, k.PageDown):
		m.offset += m.height
	case key.Matches(km, k.Top):
		m.offset = 0
	case key.Matches(km, k.Bottom):
		m.offset = last
	case key.Matches(km, k.Filter):
		m.box.open()
	case key.Matches(km, k.Back):
		m.box.set("")
		m.offset = 0
	}
	m.offset = max(0, min(m.offset, last))
	return nil
}

func (m *eventsModel) View() string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	n := m.height
	out := []string{st.ColHead.Render(fmt.Sprintf("  %-8s  %-12s %-10s %s", "TIME", "KIND", "TARGET", "MESSAGE"))}
	evs := m.matching()
	if len(evs) == 0 {
		if m.box.text != "" {
			return lines(append(out, st.Dim.Render(fmt.Sprintf("  no event matches %q (esc clears)", m.box.text))))
		}
		return lines(append(out, st.Dim.Render("  no events yet")))
	}
	const prefixW = 2 + 8 + 2 + 12 + 1 + 10 + 1
	msgW := max(20, m.width-prefixW)
	for i := min(m.offset, len(evs)-1); i < len(evs) && len(out) < n; i++ {
		e := evs[i]
		target := shortID(e.StatementID, g.Ellipsis)
		if target == "" {
			target = e.Endpoint
		}
		// The request id gets a line of its own so a long message never
		// cuts it: it is what Databricks support asks for.
		id := eventRequestID(e)
		keep := eventLines
		if id != "" {
			keep--
		}
		w, indent := msgW, prefixW
		if m.full && i == m.offset {
			// The whole text, under its first line at the full width.
			keep, w, indent = n, max(20, m.width-4), 4
		}
		parts := wrapWords(eventText(e), w)
		if len(parts) > keep {
			parts = parts[:keep]
			parts[keep-1] = ansi.Truncate(parts[keep-1], w-ansi.StringWidth(g.Ellipsis), "") + g.Ellipsis
		}
		if id != "" {
			if last := parts[len(parts)-1]; ansi.StringWidth(last)+len("  request_id ")+len(id) <= w {
				parts[len(parts)-1] = last + "  request_id " + id
			} else {
				parts = append(parts, "req "+id) // fits the 80-column message area
			}
		}
		style := lipgloss.NewStyle()
		switch {
		case e.Kind == model.EventGiveUp || e.Kind == model.EventCloseFailed ||
			(e.Flag != nil && e.Flag.Severity == "critical" && e.Kind == model.EventFlagRaised):
			style = st.Crit
		case e.Kind == model.EventRetry || e.Kind == model.EventFlagRaised:
			style = st.Warn
		}
		for j, p := range parts {
			line := strings.Repeat(" ", indent) + p
			if j == 0 {
				line = fmt.Sprintf("  %s  %-12s %s %s", e.At.UTC().Format("15:04:05"), e.Kind, fit(target, 10, g.Ellipsis), p)
			}
			out = append(out, style.Render(line))
		}
	}
	return lines(out)
}

// eventLines bounds how many lines one event may take.
const eventLines = 3

// eventText is an event's text (model.Event.Text) with its call in front
// when no error names it already.
func eventText(e model.Event) string {
	if e.Call != "" && e.Err == nil {
		return e.Call + ": " + e.Text()
	}
	return e.Text()
}

// eventRequestID is the event's request id (or its error's) unless the
// message already carries it.
func eventRequestID(e model.Event) string {
	id := e.AnyRequestID()
	if id == "" || strings.Contains(e.Message, id) {
		return ""
	}
	return id
}
