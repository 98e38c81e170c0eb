package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// clientsModel is the Clients view: the recent window aggregated by client
// application and user (model.AggregateClients), sorted by orphans, so the
// client that leaks is the first row ("Databricks JDBC 2.6.36 — 14
// orphans"). It scrolls and filters (/, on application and user): every
// figure comes from the snapshot.
type clientsModel struct {
	ctx           *programContext
	width, height int
	listCursor    // over visible(); enter opens the selected client's operations
	box           filterBox
}

func (m *clientsModel) Capturing() bool { return m.box.active }

// visible are the clients the filter lets through, in snapshot order.
func (m *clientsModel) visible() []model.ClientStats {
	cs := m.ctx.snap.Clients
	if m.box.text == "" {
		return cs
	}
	out := make([]model.ClientStats, 0, len(cs))
	for _, c := range cs {
		if containsFold(c.ClientApplication, m.box.text) || containsFold(c.User, m.box.text) {
			out = append(out, c)
		}
	}
	return out
}

func (m *clientsModel) SetSize(w, h int) { m.width, m.height = w, h; m.clamp() }

func (m *clientsModel) ShortHelp() []key.Binding {
	k := &m.ctx.keys
	return []key.Binding{k.DrillDown, k.Filter, k.Down, k.Up}
}

func (m *clientsModel) FullHelp() [][]key.Binding {
	k := &m.ctx.keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom, k.DrillDown, k.Filter, k.Back}}
}

// selected is the client under the cursor, or nil.
func (m *clientsModel) selected() *model.ClientStats {
	cs := m.visible()
	if m.cursor < 0 || m.cursor >= len(cs) {
		return nil
	}
	return &cs[m.cursor]
}

func (m *clientsModel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case snapMsg:
		m.clamp()
	case tea.KeyMsg:
		if m.box.active {
			if m.box.key(msg) {
				m.offset, m.cursor = 0, 0
			}
			m.clamp()
			return nil
		}
		k := &m.ctx.keys
		switch {
		case m.move(msg, k, len(m.visible()), m.rowsShown()):
		case key.Matches(msg, k.Filter):
			m.box.open()
		case key.Matches(msg, k.Back):
			m.box.set("")
		}
		m.clamp()
	}
	return nil
}

// rowsShown is the table height: the body minus the culprit line and the
// column header.
func (m *clientsModel) rowsShown() int { return max(1, m.height-2) }

// clamp keeps the cursor on a listed client and its row on screen.
func (m *clientsModel) clamp() { m.listCursor.clamp(len(m.visible()), m.rowsShown()) }

// Column widths; CLIENT APPLICATION takes what is left (at least 16).
// Below 100 columns the others narrow so that the application keeps room
// for its driver version, the point of this view; below 80, CANCELS and
// P95 drop (p95 0), in that order of the row, last first.
func (m *clientsModel) widths() (app, user, num, p95 int) {
	user, num, p95 = 18, 8, 8
	cols := 4
	switch {
	case m.width < 80:
		user, num, p95, cols = 12, 7, 0, 3
	case m.width < 100:
		user, num, p95 = 14, 7, 6
	}
	app = max(16, m.width-2-user-1-cols*(num+1)-p95-1)
	return app, user, num, p95
}

// fitApp fits a client application in w cells keeping its last word (the
// driver version, "… 2.6.36") when the name must be cut.
func fitApp(s string, w int, ell string) string {
	if ansi.StringWidth(s) <= w {
		return fit(s, w, "")
	}
	i := strings.LastIndexByte(s, ' ')
	if i <= 0 || !strings.ContainsAny(s[i:], "0123456789") {
		return fit(s, w, ell)
	}
	ver := s[i+1:]
	head := w - ansi.StringWidth(ver) - ansi.StringWidth(ell)
	if head < 4 {
		return fit(s, w, ell)
	}
	return fit(ansi.Truncate(s[:i], head, "")+ell+ver, w, "")
}

func (m *clientsModel) View() string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	cs := m.visible()
	appW, cliUserW, cliNumW, cliP95W := m.widths()
	var out []string
	switch {
	case len(cs) == 0 && m.box.text != "":
		out = append(out, st.Dim.Render("  no client matches the filter (esc clears)"))
	case len(cs) == 0:
		out = append(out, st.Dim.Render("  no statements in the recent window"))
	case cs[0].Orphans > 0 || cs[0].Leaks > 0:
		c := cs[0]
		out = append(out, st.Crit.Render(fmt.Sprintf("%s %s — %s, %s (%s)", g.Crit,
			textfmt.Line(c.ClientApplication), plural(c.Orphans, "orphan", "orphans"), plural(c.Leaks, "leak", "leaks"), clientWho(c))))
	default:
		out = append(out, st.OK.Render("  no client orphaned or leaked a statement in the recent window"))
	}
	head := "  " + fit("CLIENT APPLICATION", appW, "") + " " + fit("USER", cliUserW, "") + " " +
		rjust("STMTS", cliNumW) + " " + rjust("ORPHANS", cliNumW) + " " + rjust("LEAKS", cliNumW)
	if cliP95W > 0 {
		head += " " + rjust("CANCELS", cliNumW) + " " + rjust("P95", cliP95W)
	}
	out = append(out, st.ColHead.Render(head))
	end := min(len(cs), m.offset+m.rowsShown())
	for i := m.offset; i < end; i++ {
		c := cs[i]
		p95 := "-"
		if c.P95Duration != nil {
			p95 = textfmt.Duration(*c.P95Duration)
		}
		mark := "  "
		if i == m.cursor {
			mark = g.Cursor + " "
		}
		line := mark + fitApp(textfmt.Line(c.ClientApplication), appW, g.Ellipsis) + " " + fit(textfmt.Line(c.User), cliUserW, g.Ellipsis) + " " +
			rjust(strconv.Itoa(c.Statements), cliNumW) + " " + rjust(strconv.Itoa(c.Orphans), cliNumW) + " " +
			rjust(strconv.Itoa(c.Leaks), cliNumW)
		if cliP95W > 0 {
			line += " " + rjust(strconv.Itoa(c.Cancellations), cliNumW) + " " + rjust(p95, cliP95W)
		}
		switch {
		case i == m.cursor:
			line = st.Selected.Render(fit(line, m.width, ""))
		case c.Orphans > 0 || c.Leaks > 0:
			line = st.Warn.Render(line)
		}
		out = append(out, line)
	}
	return lines(out)
}

func clientWho(c model.ClientStats) string {
	if c.User == "" {
		return plural(c.Statements, "statement", "statements")
	}
	return fmt.Sprintf("user %s, %s", textfmt.Line(c.User), plural(c.Statements, "statement", "statements"))
}

func rjust(s string, w int) string {
	if len(s) >= w {
		return s
	}
	return strings.Repeat(" ", w-len(s)) + s
}
