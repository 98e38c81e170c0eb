package tui

import (
	"strings"
)

// flagHelp is the legend the Help view shows: what each flag means and
// what to do (docs/operator-guide.md has the long form).
var flagHelp = []struct{ kind, means, act string }{
	{"INACTIVE", "the owning client stopped calling; the server reaps it at the countdown.", "Find the client (user, app); cancel (x) if it is orphaned."},
	{"STALE", "dbxtop itself has no fresh status (it keeps retrying). Check the header's last error.", ""},
	{"UNCLOSED", "finished but still open on the server: a leak.", "Re-close (c) or adopt (a)."},
	{"CLOSE_FAILED", "dbxtop's close failed; a retry with backoff is queued. See the detail's close error.", ""},
	{"REAPED", "the server failed it for inactivity: evidence a client abandoned it.", ""},
	{"CAPACITY", "vector endpoint at >= 80% (critical >= 95%) of its row limit.", ""},
	{"EXHAUSTED", "the endpoint answered RESOURCE_EXHAUSTED: writes fail until rows are removed or it is resized. Retrying does not help.", ""},
}

// helpView lists the enabled keys by group (disabled ones, e.g. actions
// in read-only mode, are not shown) and the flag legend.
func (m *Model) helpView() []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	titles := []string{"Move", "Views", "Operations table", "Actions on the selected operation"}
	if m.ctx.readOnly {
		titles[3] = "Selected operation (read-only)"
	}
	var out []string
	groups := m.ctx.keys.FullHelp()
	// Two columns of key groups when the width allows, else one.
	colW := (m.ctx.width - 4) / 2
	var cols [][]string
	for i, grp := range groups {
		t := "" // FullHelp keeps its four groups: copy and export never disable
		if i < len(titles) {
			t = titles[i]
		}
		c := []string{st.Bold.Render(t)}
		for _, b := range grp {
			h := b.Help()
			c = append(c, "  "+st.HelpKey.Render(fit(h.Key, 10, ""))+" "+st.HelpDesc.Render(h.Desc))
		}
		cols = append(cols, c)
	}
	for i := 0; i < len(cols); i += 2 {
		left := cols[i]
		var right []string
		if i+1 < len(cols) {
			right = cols[i+1]
		}
		for j := 0; j < max(len(left), len(right)); j++ {
			l, r := "", ""
			if j < len(left) {
				l = left[j]
			}
			if j < len(right) {
				r = right[j]
			}
			out = append(out, "  "+fit(l, colW, "")+r)
		}
		out = append(out, "")
	}
	out = append(out, st.Bold.Render("  Flags")+st.Dim.Render("  ("+g.Crit+" CRIT = critical, "+g.Warn+" WARN = warning)"))
	for _, f := range flagHelp {
		text := f.means
		if f.act != "" && !m.ctx.readOnly {
			text += " " + f.act // read-only: never advertise a disabled key
		}
		// Wrap the text alone: wrapping collapses the padding of the name.
		for i, l := range wrapWords(text, m.ctx.width-18) {
			name := strings.Repeat(" ", 13)
			if i == 0 {
				name = st.Bold.Render(fit(f.kind, 13, ""))
			}
			out = append(out, "  "+name+" "+l)
		}
	}
	if m.ctx.readOnly {
		out = append(out, "", st.Badge.Render(" READ-ONLY ")+" adopt, re-close and cancel are disabled; the engine refuses them too.")
	}
	return out
}
