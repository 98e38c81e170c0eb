package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Layout: a fixed header, the body of the current view, and a two-line
// footer (status line and short help). Every line is cut to the width so
// the screen never wraps.
const (
	headerLines = 5
	footerLines = 2
)

func (m *Model) bodyHeight() int {
	return max(1, m.ctx.height-headerLines-footerLines)
}

// View renders exactly height lines of at most width cells.
func (m *Model) View() string {
	w, h := m.ctx.width, m.ctx.height
	if w == 0 || h == 0 {
		return "starting dbxtop" + m.ctx.glyphs.Ellipsis
	}
	if w < minWidth || h < minHeight {
		return m.tooSmall()
	}
	lines := make([]string, 0, h)
	lines = append(lines, m.header()...)
	var body []string
	switch {
	case !m.loaded && m.view != viewHelp:
		body = []string{"", "  waiting for the first snapshot" + m.ctx.glyphs.Ellipsis}
	case m.view == viewOps && m.detail:
		body = m.detailView()
	case m.view == viewOps:
		body = m.opsView()
	case m.view == viewEndpoints:
		body = m.endpointsView()
	case m.view == viewEvents:
		body = m.eventsView()
	case m.view == viewHelp:
		body = m.helpView()
	}
	bh := m.bodyHeight()
	if len(body) > bh {
		body = body[:bh]
	}
	for len(body) < bh {
		body = append(body, "")
	}
	if m.confirm != nil {
		body = m.overlayConfirm(body)
	}
	lines = append(lines, body...)
	lines = append(lines, m.statusLine(), m.shortHelp())
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "")
		}
	}
	return strings.Join(lines, "\n")
}

// tooSmall is the whole screen below 80×24: a centred message instead of
// a broken layout.
func (m *Model) tooSmall() string {
	x := "×"
	if m.ctx.opts.ASCII {
		x = "x"
	}
	msg := fmt.Sprintf("terminal too small: %d%s%d, dbxtop needs at least %d%s%d",
		m.ctx.width, x, m.ctx.height, minWidth, x, minHeight)
	msg = ansi.Wrap(msg, m.ctx.width, " ")
	return lipgloss.Place(m.ctx.width, m.ctx.height, lipgloss.Center, lipgloss.Center, msg)
}

// header: identity and badges; poller health; counts per flag; tabs;
// a rule.
func (m *Model) header() []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	ws := m.ctx.opts.Workspace
	if m.snap.Workspace.Host != "" {
		ws = m.snap.Workspace
	}
	title := "dbxtop"
	if v := m.ctx.opts.Version; v != "" {
		title += " " + v
	}
	whs := "all visible"
	if len(ws.Warehouses) > 0 {
		whs = strings.Join(ws.Warehouses, ",")
	}
	l1 := st.Title.Render(title) + "  " + textfmt.OrDash(ws.Host) + "  warehouses " + whs +
		"  refresh " + m.ctx.opts.Refresh.String()
	if m.ctx.readOnly {
		l1 += "  " + st.Badge.Render(" READ-ONLY ")
	}
	if m.paused {
		l1 += "  " + st.Badge.Render(" PAUSED (order frozen) ")
	}

	h := m.health
	l2 := fmt.Sprintf("poller  followed %d  in flight %d  retry budget %.0f/%.0f  polls %d  retries %d  give-ups %d",
		h.Followed, h.InFlight, h.BudgetAvailable, h.BudgetCapacity, h.Polls, h.Retries, h.GiveUps)
	if h.EventsDropped > 0 {
		l2 += fmt.Sprintf("  events dropped %d", h.EventsDropped)
	}
	// The last error gets a line of its own: it is what the operator
	// reports (call, cause, attempts, request id).
	l2e := "last error: none"
	if h.LastError != nil {
		l2e = "last error: " + st.Crit.Render(errorLine(h.LastError))
	}
	// A listing that left operations out outranks the last error: what
	// the screen shows is not everything (never a silent cap).
	for i := range m.snap.Errors {
		if e := &m.snap.Errors[i]; e.Kind == model.KindTruncated {
			l2e = st.Crit.Render("INCOMPLETE: " + e.Call + " " + e.Message)
			break
		}
	}

	c := &m.counts
	l3 := "flags"
	// Only raised flags are listed, so the line fits 80 columns.
	nflags := 0
	for _, k := range []model.FlagKind{model.FlagInactive, model.FlagStale, model.FlagUnclosed, model.FlagCloseFailed, model.FlagReaped} {
		if c.warn[k]+c.crit[k] > 0 {
			l3 += " " + m.countCell(k, c.warn[k], c.crit[k])
			nflags++
		}
	}
	if nflags == 0 {
		l3 += " " + st.OK.Render("no operation flags")
	}
	l3 += " " + g.VerticalSep + fmt.Sprintf(" endpoints %d", len(m.snap.Endpoints))
	if len(m.snap.Endpoints) > 0 {
		l3 += ":"
	}
	for _, k := range []model.FlagKind{model.FlagExhausted, model.FlagCapacity} {
		if c.warn[k]+c.crit[k] > 0 {
			l3 += " " + m.countCell(k, c.warn[k], c.crit[k])
		}
	}

	var tabs []string
	for v := viewID(0); v < numViews; v++ {
		if v == m.view {
			tabs = append(tabs, st.TabActive.Render("["+viewNames[v]+"]"))
		} else {
			tabs = append(tabs, st.TabIdle.Render(" "+viewNames[v]+" "))
		}
	}
	l4 := strings.Join(tabs, " ") + "   " + st.Dim.Render(fmt.Sprintf("ops %d  live %d  flagged %d", c.ops, c.running, c.flagged))
	if m.view == viewOps {
		l4 += st.Dim.Render("  " + g.VerticalSep + "  " + m.tableInfo())
	}
	return []string{l1, l2, l2e, l3, l4}
}

// countCell is "INACTIVE 3" with its severity as a symbol, so it reads
// without colour: "!! INACTIVE 3 (1 crit)".
func (m *Model) countCell(k model.FlagKind, warn, crit int) string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	n := warn + crit
	switch {
	case crit > 0 && warn > 0:
		return st.Crit.Render(fmt.Sprintf("%s %s %d(%d crit)", g.Crit, k, n, crit))
	case crit > 0:
		return st.Crit.Render(fmt.Sprintf("%s %s %d", g.Crit, k, n))
	case warn > 0:
		return st.Warn.Render(fmt.Sprintf("%s %s %d", g.Warn, k, n))
	}
	return ""
}

// tableInfo: sort, filter and how many rows are shown.
func (m *Model) tableInfo() string {
	dir := "desc"
	if !m.desc {
		dir = "asc"
	}
	s := fmt.Sprintf("sort %s %s", m.sort, dir)
	if m.filter.text != "" {
		s += fmt.Sprintf("  filter %q", m.filter.text)
	}
	if m.filter.flaggedOnly {
		s += "  flagged only"
	}
	return s + fmt.Sprintf("  showing %d", len(m.rows))
}

// statusLine: the filter input while typing; else the gone/hidden line
// for the cursor's operation; else the last action's status.
func (m *Model) statusLine() string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	switch {
	case m.filtering:
		return st.Bold.Render("/"+m.filterInput.Value()+"_") + st.Dim.Render("  filter: id, user, warehouse, state, flag or SQL (enter keeps, esc clears)")
	case m.view == viewOps && m.missing == gone:
		return st.Warn.Render(fmt.Sprintf("operation %s is gone (closed or reaped)", shortID(m.cursorID, g.Ellipsis)))
	case m.view == viewOps && m.missing == hidden:
		return st.Warn.Render(fmt.Sprintf("operation %s is hidden by the filter (esc clears)", shortID(m.cursorID, g.Ellipsis)))
	case m.status != "" && m.statusCrit:
		return st.Crit.Render(m.status)
	case m.status != "":
		return st.Status.Render(m.status)
	}
	return ""
}

// shortHelp is the footer's key list; disabled keys are not listed, and
// on a narrow screen the list is cut before "? help" and "q quit", which
// always show.
func (m *Model) shortHelp() string {
	st, sep := &m.ctx.styles, m.ctx.glyphs.HelpSep
	bs := m.ctx.keys.ShortHelp()
	render := func(i int) string {
		h := bs[i].Help()
		return st.HelpKey.Render(h.Key) + " " + st.HelpDesc.Render(h.Desc)
	}
	tailW := 0
	for i := len(bs) - 2; i < len(bs); i++ {
		tailW += ansi.StringWidth(render(i)) + len(sep)
	}
	var parts []string
	used := tailW
	for i := 0; i < len(bs)-2; i++ {
		p := render(i)
		if used+ansi.StringWidth(p)+len(sep) > m.ctx.width {
			break
		}
		used += ansi.StringWidth(p) + len(sep)
		parts = append(parts, p)
	}
	parts = append(parts, render(len(bs)-2), render(len(bs)-1))
	return strings.Join(parts, st.HelpDesc.Render(sep))
}
