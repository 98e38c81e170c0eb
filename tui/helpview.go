package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/dbxtop/dbxtop/model"
)

// flagHelp is the legend the Help view shows: what each flag means and
// what to do (docs/operator-guide.md has the long form).
var flagHelp = []struct{ kind, means, act string }{
	{"INACTIVE", "the owning client stopped calling; the server reaps it at the countdown.", "Find the client (user, app); cancel (x) if it is orphaned."},
	{"STALE", "dbxtop itself has no fresh status (it keeps retrying). Check the header's last error.", ""},
	{"UNCLOSED", "finished but still open on the server: a leak.", "Re-close (c) or adopt (a)."},
	{"CLOSE_FAILED", "a close failed and the operation is still open: dbxtop's own close (a retry with backoff is queued), or its client's close as the proxy saw it (the proxy retries). It clears once the operation is closed; the event says who closed it.", ""},
	{"REAPED", "the server failed it for inactivity: evidence a client abandoned it.", ""},
	{"CAPACITY", "vector endpoint at >= 80% (critical >= 95%) of its row limit; the line under it says which limit (published, config, tag, learned).", ""},
	{"EXHAUSTED", "the endpoint answered RESOURCE_EXHAUSTED: writes fail until rows are removed or it is resized. Retrying does not help.", ""},
	{"ENDPOINT_STATE", "the endpoint is not ONLINE (PROVISIONING, YELLOW_STATE; critical: RED_STATE, OFFLINE), with the server's message.", ""},
	{"INDEX_NOT_READY", "indexes with ready=false, with their status messages.", ""},
	{"INDEX_QUOTA", "45+ of the 50 indexes per endpoint (critical at 50, or the server's 400 QUOTA_EXCEEDED).", ""},
	{"THROUGHPUT", "concurrency utilisation >= 90% (critical >= 100%): queries and writes beyond it fail.", ""},
}

// helpModel is the Help view: every enabled key, rendered by bubbles/help
// from the keymap (so help cannot drift from behaviour), then the flag
// legend. It scrolls; ? or esc returns to the view it was opened from.
type helpModel struct {
	ctx   *programContext
	width int
	pager
	from viewID
	help help.Model
}

func newHelpModel(ctx *programContext) *helpModel {
	h := help.New()
	h.Styles.FullKey = ctx.styles.HelpKey
	h.Styles.FullDesc = ctx.styles.HelpDesc
	h.Styles.FullSeparator = ctx.styles.HelpDesc
	h.Styles.Ellipsis = ctx.styles.HelpDesc
	h.FullSeparator = "    "
	h.Ellipsis = ctx.glyphs.Ellipsis
	return &helpModel{ctx: ctx, help: h}
}

func (m *helpModel) SetSize(w, h int) { m.width, m.height = w, h; m.help.Width = w - 2 }

func (m *helpModel) ShortHelp() []key.Binding {
	k := &m.ctx.keys
	return []key.Binding{k.Back, k.Down, k.PageDown}
}

func (m *helpModel) FullHelp() [][]key.Binding { return pagerHelp(&m.ctx.keys) }

func (m *helpModel) Update(msg tea.Msg) tea.Cmd {
	m.update(msg, &m.ctx.keys, len(m.build()))
	return nil
}

func (m *helpModel) View() string {
	l := m.build()
	s := m.start(len(l))
	out := l[s:]
	if more := len(l) - s - m.height; more > 0 && m.height > 1 {
		out = append(out[:m.height-1:m.height-1], m.ctx.styles.Dim.Render(fmt.Sprintf("  %d more lines (j/pgdn)", more)))
	}
	return lines(out)
}

func (m *helpModel) build() []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	titles := []string{"Move", "Views and program", "Operations table", "Actions on the selected operation",
		"Clients, Warehouses, Events (esc returns from a drill-down)"}
	if m.ctx.readOnly {
		titles[3] = "Selected operation (read-only)"
	}
	groups := m.ctx.keys.FullHelp()
	var out []string
	// Two groups side by side when both fit, else one per block.
	per := 2
	if m.width < 100 {
		per = 1
	}
	for i := 0; i < len(groups); i += per {
		// Each group is its title over bubbles/help's rendering of its
		// keys; blocks sit side by side, 40 cells apart.
		var blocks []string
		for g := i; g < min(i+per, len(groups)); g++ {
			t := ""
			if g < len(titles) {
				t = titles[g]
			}
			b := st.Bold.Render(t) + "\n" + m.help.FullHelpView(groups[g:g+1])
			if g < min(i+per, len(groups))-1 {
				b = lipgloss.NewStyle().Width(44).Render(b)
			}
			blocks = append(blocks, b)
		}
		for _, l := range strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, blocks...), "\n") {
			out = append(out, "  "+strings.TrimRight(l, " "))
		}
		out = append(out, "")
	}
	out = append(out, "  "+st.Bold.Render("In every list")+st.Dim.Render("  / filters and captures every key until enter or esc; several keys"))
	out = append(out, st.Dim.Render("  arriving at once (paste, slow link) count as that many presses."), "")
	if m.ctx.readOnly {
		// Before the legend, next to the keys it is about.
		out = append(out, st.Badge.Render(" READ-ONLY ")+" adopt, re-close and cancel are refused; the engine refuses them too.", "")
	}
	out = append(out, st.Bold.Render("  Cells"))
	for _, l := range wrapWords("? means dbxtop cannot know: the server does not say when the owning client last "+
		"called (IDLE/REAPER) or whether another client's operation is still open (CLOSE). A dbxtop proxy in front "+
		"of the clients sees both (--proxy). - means the column does not apply.", m.width-4) {
		out = append(out, "  "+l)
	}
	out = append(out, "")
	out = append(out, st.Bold.Render("  Flags")+st.Dim.Render("  ("+g.Crit+" CRIT = critical, "+g.Warn+" WARN = warning)"))
	for _, f := range flagHelp {
		text := f.means
		if sh := shortKind[model.FlagKind(f.kind)]; sh != f.kind {
			text = "(" + sh + " in a narrow header) " + text
		}
		if f.act != "" && !m.ctx.readOnly {
			text += " " + f.act // read-only: never advertise a disabled key
		}
		// Wrap the text alone: wrapping collapses the padding of the name.
		for i, l := range wrapWords(text, m.width-20) {
			name := strings.Repeat(" ", 15)
			if i == 0 {
				name = st.Bold.Render(fit(f.kind, 15, ""))
			}
			out = append(out, "  "+name+" "+l)
		}
	}
	return out
}
