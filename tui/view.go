package tui

import (
	"fmt"
	"github.com/charmbracelet/bubbles/key"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Layout: a header, the body of the current view, and a two-line footer
// (status line and short help). Every line is cut to the width so the
// screen never wraps. The header is five lines, six when the raised flag
// kinds need a second line (flagLines).
const footerLines = 2

// headerHeight is how many lines header() returns.
func (m *Model) headerHeight() int { return 4 + len(m.flagLines()) }

func (m *Model) bodyHeight() int {
	return max(1, m.ctx.height-m.headerHeight()-footerLines)
}

// resize gives every view the body's size; the body shrinks by a line
// when the flag counts need a second header line.
func (m *Model) resize() {
	bw, bh := m.ctx.width, m.bodyHeight()
	if bw == m.sized[0] && bh == m.sized[1] {
		return
	}
	m.sized = [2]int{bw, bh}
	for _, c := range []component{m.ops, m.detail, m.endpoints, m.evs, m.clients, m.whs, m.help} {
		c.SetSize(bw, bh)
	}
}

// render builds the frame from the model's state: exactly height lines of
// at most width cells.
func (m *Model) render() string {
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
	if !m.ctx.loaded && m.view != viewHelp {
		body = []string{"", "  waiting for the first snapshot" + m.ctx.glyphs.Ellipsis}
	} else {
		body = strings.Split(m.current().View(), "\n")
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
			// Never a silent cut mid-word: the ellipsis says text goes on.
			lines[i] = ansi.Truncate(l, w, m.ctx.glyphs.Ellipsis)
		}
	}
	frame := strings.Join(lines, "\n")
	if m.ctx.opts.ASCII {
		// Every glyph of dbxtop's own is ASCII here; what is left is
		// server text (names, SQL, the sanitiser's markers).
		frame = asciiOnly(frame)
	}
	return frame
}

// asciiOnly replaces every non-ASCII rune with '?' (--ascii).
func asciiOnly(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.Map(func(r rune) rune {
				if r >= 0x80 {
					return '?'
				}
				return r
			}, s)
		}
	}
	return s
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

// seg is one piece of a header line. When a line is too wide the
// lowest-priority pieces go first (the later one among equals), and the
// line ends with the Cut glyph so the operator knows something was
// dropped; a piece is never cut in the middle of a word.
type seg struct {
	text string // may be styled
	prio int
}

// Priorities of header pieces: what an operator acts on stays longest.
const (
	prioLow      = 10
	prioMid      = 50
	prioHigh     = 80
	prioCritical = 100 // badges, filter, sort, flag counts, tabs: never dropped at 80 columns
)

func fitSegs(segs []seg, w int, sep, cut string) string {
	segs = slices.Clone(segs)
	width := func() int {
		n := 0
		for i, s := range segs {
			if i > 0 {
				n += len(sep)
			}
			n += ansi.StringWidth(s.text)
		}
		return n
	}
	dropped := false
	for len(segs) > 1 && width()+btoi(dropped)*(len(sep)+ansi.StringWidth(cut)) > w {
		lo := 0
		for i, s := range segs {
			if s.prio <= segs[lo].prio {
				lo = i
			}
		}
		segs = slices.Delete(segs, lo, lo+1)
		dropped = true
	}
	parts := make([]string, 0, len(segs)+1)
	for _, s := range segs {
		parts = append(parts, s.text)
	}
	if dropped {
		parts = append(parts, cut)
	}
	return strings.Join(parts, sep)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dataRefresh is the engine's refresh period in force (+ and - change
// it), else the one the TUI was started with.
func (m *Model) dataRefresh() time.Duration {
	if rs, ok := m.eng.(RefreshSetter); ok {
		if d := rs.Refresh(); d > 0 {
			return d
		}
	}
	return m.ctx.opts.Refresh
}

// header: identity and badges; poller health; the last error; counts per
// flag; tabs with the view's sort and filter.
func (m *Model) header() []string {
	st, g, w := &m.ctx.styles, m.ctx.glyphs, m.ctx.width
	cut := st.Dim.Render(g.Cut)
	out := []string{fitSegs(m.identityLine(), w, "  ", cut), fitSegs(m.pollerLine(), w, "  ", cut), m.lastErrorLine()}
	out = append(out, m.flagLines()...)
	return append(out, fitSegs(m.tabsLine(), w, "  ", cut))
}

// identityLine: the title and badges, what is watched, and how often.
func (m *Model) identityLine() []seg {
	st, g := &m.ctx.styles, m.ctx.glyphs
	ws := m.ctx.workspace()
	title := "dbxtop"
	if v := m.ctx.opts.Version; v != "" {
		title += " " + v
	}
	whs := "all visible"
	if len(ws.Warehouses) > 0 {
		whs = strings.Join(ws.Warehouses, ",")
	}
	if l := ws.Listing; l != nil && l.Matched == 0 {
		// The body says why and what to check (noWarehouses).
		if len(ws.Warehouses) == 0 {
			whs = "none visible"
		} else {
			whs += " (none listed)"
		}
	}
	l1 := []seg{{st.Title.Render(title), prioCritical}}
	if m.ctx.readOnly {
		l1 = append(l1, seg{st.Badge.Render(" READ-ONLY "), prioCritical})
	}
	if m.ops.paused {
		l1 = append(l1, seg{st.Badge.Render(" PAUSED "), prioCritical})
	}
	// The scheme says nothing an operator needs; 8 columns matter at 80.
	host := strings.TrimPrefix(ws.Host, "https://")
	if wss := m.ctx.snap.Workspaces; len(wss) > 1 {
		// Several workspaces: each by name with its state, a down one in
		// words (never by colour alone).
		for _, w := range wss {
			if w.Up {
				l1 = append(l1, seg{st.OK.Render(w.Name + " up"), prioHigh})
			} else {
				l1 = append(l1, seg{st.Crit.Render(g.Crit + " " + w.Name + " DOWN"), prioCritical})
			}
		}
	} else {
		l1 = append(l1, seg{textfmt.OrDash(host), prioMid}, seg{"warehouses " + whs, prioLow})
	}
	if r := m.ctx.opts.SourceRefresh; r > 0 {
		l1 = append(l1, seg{"refresh " + r.String() + " (serve)", prioHigh})
	} else {
		l1 = append(l1, seg{"refresh " + m.dataRefresh().String(), prioHigh})
	}
	if s := m.ctx.screenRefresh(); s != m.dataRefresh() {
		l1 = append(l1, seg{"screen " + s.String(), prioHigh})
	}
	if m.ctx.loaded && m.ctx.frozen == nil {
		// Liveness: how old the data on screen is (the snapshot's own
		// time, serve's for attach). Never dropped at 80 columns. While a
		// source is down the snapshot is new but its data is not: the
		// frozen banner (line 3) says since when instead.
		age := textfmt.Age(m.ctx.opts.Now(), m.ctx.snap.GeneratedAt)
		l1 = append(l1, seg{"updated " + age + " ago", prioCritical})
	}
	return l1
}

// pollerLine: the poller's health counters, and what is going wrong.
func (m *Model) pollerLine() []seg {
	st, g := &m.ctx.styles, m.ctx.glyphs
	h := m.ctx.health
	l2 := []seg{{"poller", prioCritical}, {fmt.Sprintf("followed %d", h.Followed), prioHigh},
		{fmt.Sprintf("in flight %d", h.InFlight), prioLow},
		{fmt.Sprintf("retry budget %.0f/%.0f", h.BudgetAvailable, h.BudgetCapacity), prioHigh},
		{fmt.Sprintf("polls %d", h.Polls), prioLow}, {fmt.Sprintf("retries %d", h.Retries), prioMid},
		{fmt.Sprintf("give-ups %d", h.GiveUps), prioMid}}
	if f := m.ctx.frozen; f != nil && f.all {
		// serve's health is unknown while it is down: never zeros.
		l2 = []seg{{"poller", prioCritical}, {st.Warn.Render("? (serve down: its counters are unknown)"), prioCritical}}
	}
	if h.BatchCalls > 0 {
		l2 = append(l2, seg{fmt.Sprintf("batches %d", h.BatchCalls), prioLow})
	}
	if h.EventsDropped > 0 {
		l2 = append(l2, seg{st.Warn.Render(fmt.Sprintf("events dropped %d", h.EventsDropped)), prioCritical})
	}
	if f := h.Freshness; f.Goal > 0 && !f.Held {
		// The schedule cannot hold its freshness goal: say so, and why.
		l2 = append(l2, seg{st.Warn.Render(g.Warn + " " + f.String()), prioCritical})
	}
	return l2
}

// tabsLine: the views, the current one in brackets, then its sort and
// filter and the operation counts.
func (m *Model) tabsLine() []seg {
	st, w := &m.ctx.styles, m.ctx.width
	c := &m.counts
	var tabs []string
	for v := viewID(0); v < numViews; v++ {
		if v == viewHelp && v != m.view && w < 100 {
			continue // the footer's "? help" names it; 5 columns matter at 80
		}
		switch {
		case v == m.view:
			tabs = append(tabs, st.TabActive.Render("["+viewNames[v]+"]"))
		case w < 100:
			tabs = append(tabs, st.TabIdle.Render(shortViewNames[v])) // the view's info must fit at 80
		default:
			tabs = append(tabs, st.TabIdle.Render(viewNames[v]))
		}
	}
	l4 := []seg{{strings.Join(tabs, " "), prioCritical}}
	l4 = append(l4, m.viewInfo()...)
	return append(l4, seg{st.Dim.Render(fmt.Sprintf("ops %d live %d flagged %d", c.ops, c.running, c.flagged)), prioLow})
}

// lastErrorLine is the last error with its age, or when it recovered. It
// is cut at the width; the full text (request id included) is one key
// away: ! opens it in the Events view.
func (m *Model) lastErrorLine() string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	// A listing that left operations out outranks the last error: what
	// the screen shows is not everything (never a silent cap).
	for i := range m.ctx.snap.Errors {
		if e := &m.ctx.snap.Errors[i]; e.Kind == model.KindTruncated {
			return truncLine(st.Crit.Render("INCOMPLETE: "+e.Call+" "+e.Message), m.ctx.width, g.Ellipsis)
		}
	}
	if f := m.ctx.frozen; f != nil {
		return m.frozenLine(f)
	}
	e := m.ctx.health.LastError
	if e == nil {
		if n := m.ctx.health.Retries; n > 0 {
			// Retries are failures too: not "none" while they run.
			return st.Warn.Render(fmt.Sprintf("last error: none given up yet (%d retries; ! shows them)", n))
		}
		return "last error: none"
	}
	now := m.ctx.opts.Now()
	var head string
	if r := m.lastErr.recovered; !r.IsZero() && m.lastErr.sawFailing {
		head = st.OK.Render("recovered "+r.UTC().Format("15:04:05")) + st.Dim.Render(" (last error "+textfmt.Age(now, m.lastErr.since)+" ago: ")
		line := head + st.Dim.Render(e.Line()+")")
		return truncLine(line, m.ctx.width, g.Ellipsis)
	}
	head = "last error " + textfmt.Age(now, m.lastErr.since) + " ago: "
	if e.Workspace != "" {
		head += "[" + e.Workspace + "] "
	}
	line := head + st.Crit.Render(e.Line())
	return truncLine(line, m.ctx.width, g.Ellipsis+" (! full)")
}

func truncLine(s string, w int, tail string) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, tail)
}

// viewInfo is what the current view is narrowed or ordered by: always
// shown, even when the sorted column is hidden at this width.
func (m *Model) viewInfo() []seg {
	st := &m.ctx.styles
	switch m.view {
	case viewOps:
		o := m.ops
		dir := "desc"
		if !o.desc {
			dir = "asc"
		}
		sorted := fmt.Sprintf("sort %s %s", o.sort, dir)
		if m.ctx.width < 100 {
			// The column header's arrow: room for the row position at 80.
			sorted = fmt.Sprintf("sort %s%s", o.sort, arrow(m.ctx.glyphs, o.desc))
		}
		out := []seg{{st.Bold.Render(sorted), prioCritical}}
		if o.filter.Text != "" {
			out = append(out, seg{st.Bold.Render(fmt.Sprintf("filter %q", clip(o.filter.Text, 20, m.ctx.glyphs.Ellipsis))), prioCritical})
		}
		if o.filter.FlaggedOnly {
			out = append(out, seg{st.Bold.Render("flagged only"), prioCritical})
		}
		if o.filter.Workspace != "" {
			hint := " (w: next)"
			if m.ctx.width < 100 {
				hint = "" // the help lists w; the name is what must fit
			}
			out = append(out, seg{st.Bold.Render("workspace " + clip(o.filter.Workspace, 16, m.ctx.glyphs.Ellipsis) + hint), prioCritical})
		} else if len(m.ctx.snap.Workspaces) > 1 {
			out = append(out, seg{st.Dim.Render(fmt.Sprintf("%d workspaces (w: one)", len(m.ctx.snap.Workspaces))), prioMid})
		}
		// Where the cursor is: "row 3/17" ("-" while its operation is not listed).
		pos := "-"
		if o.cursorRow >= 0 {
			pos = fmt.Sprint(o.cursorRow + 1)
		}
		where := fmt.Sprintf("row %s/%d", pos, len(o.rows))
		if len(o.rows) == 0 {
			where = "0 rows"
		}
		out = append(out, seg{st.Dim.Render(where), prioHigh})
		if n := o.flaggedBelow(); n > 0 && o.sort != model.SortSeverity {
			out = append(out, seg{st.Warn.Render(fmt.Sprintf("%d flagged below", n)), prioCritical})
		}
		return out
	case viewEndpoints:
		if t := m.endpoints.box.text; t != "" {
			return []seg{{st.Bold.Render(fmt.Sprintf("filter %q", clip(t, 20, m.ctx.glyphs.Ellipsis))), prioCritical}}
		}
	case viewEvents:
		if t := m.evs.box.text; t != "" {
			return []seg{{st.Bold.Render(fmt.Sprintf("filter %q", clip(t, 20, m.ctx.glyphs.Ellipsis))), prioCritical}}
		}
	case viewClients:
		if t := m.clients.box.text; t != "" {
			return []seg{{st.Bold.Render(fmt.Sprintf("filter %q", clip(t, 20, m.ctx.glyphs.Ellipsis))), prioCritical}}
		}
	case viewWarehouses:
		if t := m.whs.box.text; t != "" {
			return []seg{{st.Bold.Render(fmt.Sprintf("filter %q", clip(t, 20, m.ctx.glyphs.Ellipsis))), prioCritical}}
		}
	}
	return nil
}

func clip(s string, n int, ell string) string {
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, ell)
}

// statusLine: the filter prompt while typing; else the gone/hidden line
// for the cursor's operation; else the last action's status.
func (m *Model) statusLine() string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	switch {
	case m.view == viewOps && m.ops.menu.open && !m.detailOpen:
		return m.ops.menuLine(st, m.ctx.width)
	case m.view == viewOps && m.ops.box.active && !m.detailOpen:
		return m.ops.box.prompt(st, "words, user: client: wh: state: flag: age>5m idle>1m")
	case m.view == viewEndpoints && m.endpoints.box.active:
		return m.endpoints.box.prompt(st, "name, type, state, flag or index")
	case m.view == viewEvents && m.evs.box.active:
		return m.evs.box.prompt(st, "kind (retry, give-up…), operation, endpoint or text")
	case m.view == viewClients && m.clients.box.active:
		return m.clients.box.prompt(st, "client application or user")
	case m.view == viewWarehouses && m.whs.box.active:
		return m.whs.box.prompt(st, "warehouse name, id or state")
	case m.view == viewOps && m.ops.missing == gone && m.ops.missingSeq > m.ctx.statusSeq:
		return st.Warn.Render(fmt.Sprintf("operation %s is gone (closed or reaped)", shortID(m.ops.cursorID, g.Ellipsis)))
	case m.view == viewOps && m.ops.missing == collapsed && m.ops.missingSeq > m.ctx.statusSeq:
		return st.Status.Render(fmt.Sprintf("operation %s finished and was closed (d shows finished rows)", shortID(m.ops.cursorID, g.Ellipsis)))
	case m.view == viewOps && m.ops.missing == hidden && m.ops.missingSeq > m.ctx.statusSeq:
		return st.Warn.Render(fmt.Sprintf("operation %s is hidden by the filter (esc clears)", shortID(m.ops.cursorID, g.Ellipsis)))
	case m.ctx.statusLive() && m.ctx.statusCrit:
		return st.Crit.Render(cutWords(m.ctx.status, m.ctx.width, g.Ellipsis))
	case m.ctx.statusLive():
		return st.Status.Render(cutWords(m.ctx.status, m.ctx.width, g.Ellipsis))
	case m.view == viewOps && m.ops.filter.Text != "":
		return m.filterLine()
	}
	return ""
}

// filterLine is the status line while Operations is filtered: the whole
// filter (the header clips it), or what is wrong with it.
func (m *Model) filterLine() string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	if err := model.ParseFilter(m.ops.filter.Text); err != nil {
		return st.Warn.Render(cutWords(err.Error()+" (/ edits)", m.ctx.width, g.Ellipsis))
	}
	back := "esc clears"
	if m.drillFrom >= 0 {
		back = "esc returns to " + viewNames[m.drillFrom]
	}
	return st.Status.Render(cutWords(fmt.Sprintf("%s (%s) filter %s", plural(len(m.ops.rows), "row", "rows"), back, m.ops.filter.Text), m.ctx.width, g.Ellipsis))
}

// cutWords fits s in w cells, cutting after a whole word and marking the
// cut with ell: a status line is never cut mid-word (the Events view has
// the whole text).
func cutWords(s string, w int, ell string) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	cut := ansi.Truncate(s, max(0, w-ansi.StringWidth(ell)), "")
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = strings.TrimRight(cut[:i], " ,;:")
	}
	return cut + ell
}

// shortHelp is the footer: the current view's keys, then the program's;
// disabled keys are not listed, and on a narrow screen the list is cut
// before "? help" and "q quit", which always show.
func (m *Model) shortHelp() string {
	st, sep := &m.ctx.styles, m.ctx.glyphs.HelpSep
	k := &m.ctx.keys
	bs := append(m.current().ShortHelp(), k.NextView, k.Help, k.Quit)
	if c, ok := m.current().(capturer); ok && c.Capturing() {
		// Typing: q and tab are text now, so only the prompt's keys work.
		bs = []key.Binding{k.PromptKeep, k.PromptClear, k.PromptQuit}
	}
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
