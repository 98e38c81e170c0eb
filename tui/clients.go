package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// clientsModel is the Clients view: the recent window aggregated by client
// application and user (model.AggregateClients), sorted by orphans, so the
// client that leaks is the first row ("Databricks JDBC 2.6.36 — 14
// orphans"). It only scrolls: every figure comes from the snapshot.
type clientsModel struct {
	ctx           *programContext
	width, height int
	offset        int
}

func (m *clientsModel) SetSize(w, h int) { m.width, m.height = w, h; m.clamp() }

func (m *clientsModel) ShortHelp() []key.Binding {
	k := &m.ctx.keys
	return []key.Binding{k.Down, k.Up}
}

func (m *clientsModel) FullHelp() [][]key.Binding {
	k := &m.ctx.keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom}}
}

func (m *clientsModel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case snapMsg:
		m.clamp()
	case tea.KeyMsg:
		k := &m.ctx.keys
		switch {
		case key.Matches(msg, k.Down):
			m.offset++
		case key.Matches(msg, k.Up):
			m.offset--
		case key.Matches(msg, k.Top):
			m.offset = 0
		case key.Matches(msg, k.Bottom):
			m.offset = len(m.ctx.snap.Clients)
		}
		m.clamp()
	}
	return nil
}

// rowsShown is the table height: the body minus the culprit line and the
// column header.
func (m *clientsModel) rowsShown() int { return max(1, m.height-2) }

func (m *clientsModel) clamp() {
	m.offset = min(m.offset, max(0, len(m.ctx.snap.Clients)-m.rowsShown()))
	m.offset = max(m.offset, 0)
}

// Fixed widths; CLIENT takes what is left (at least 16).
const (
	cliUserW = 18
	cliNumW  = 8
	cliP95W  = 8
)

func (m *clientsModel) View() string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	cs := m.ctx.snap.Clients
	appW := max(16, m.width-2-cliUserW-1-4*(cliNumW+1)-cliP95W-1)
	var out []string
	switch {
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
		rjust("STMTS", cliNumW) + " " + rjust("ORPHANS", cliNumW) + " " + rjust("LEAKS", cliNumW) + " " +
		rjust("CANCELS", cliNumW) + " " + rjust("P95", cliP95W)
	out = append(out, st.ColHead.Render(head))
	end := min(len(cs), m.offset+m.rowsShown())
	for i := m.offset; i < end; i++ {
		c := cs[i]
		p95 := "-"
		if c.P95Duration != nil {
			p95 = textfmt.Duration(*c.P95Duration)
		}
		line := "  " + fit(textfmt.Line(c.ClientApplication), appW, g.Ellipsis) + " " + fit(textfmt.Line(c.User), cliUserW, g.Ellipsis) + " " +
			rjust(strconv.Itoa(c.Statements), cliNumW) + " " + rjust(strconv.Itoa(c.Orphans), cliNumW) + " " +
			rjust(strconv.Itoa(c.Leaks), cliNumW) + " " + rjust(strconv.Itoa(c.Cancellations), cliNumW) + " " + rjust(p95, cliP95W)
		if c.Orphans > 0 || c.Leaks > 0 {
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
