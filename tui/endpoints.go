package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// endpointsModel: one line per endpoint with its capacity bar, %, rows and
// limit, time to full and flag badge; a second line with the server's
// error (message and request id) when there is one; its indexes when
// expanded with enter. `/` filters by name, type, state, flag or index.
type endpointsModel struct {
	ctx           *programContext
	width, height int
	cursor        int // index into visible()
	expanded      map[string]bool
	offset        int // first body line shown under the column header
	box           filterBox
}

func newEndpointsModel(ctx *programContext) *endpointsModel {
	return &endpointsModel{ctx: ctx, expanded: map[string]bool{}}
}

func (m *endpointsModel) SetSize(w, h int) { m.width, m.height = w, h; m.follow() }

func (m *endpointsModel) Capturing() bool { return m.box.active }

func (m *endpointsModel) ShortHelp() []key.Binding {
	k := &m.ctx.keys
	return []key.Binding{k.Detail, k.Filter, k.Down}
}

func (m *endpointsModel) FullHelp() [][]key.Binding {
	k := &m.ctx.keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom, k.Detail, k.Filter, k.Back}}
}

// visible are the endpoints the filter lets through, in snapshot order.
func (m *endpointsModel) visible() []*model.EndpointView {
	eps := m.ctx.snap.Endpoints
	out := make([]*model.EndpointView, 0, len(eps))
	for i := range eps {
		if ep := &eps[i]; m.match(ep) {
			out = append(out, ep)
		}
	}
	return out
}

func (m *endpointsModel) match(ep *model.EndpointView) bool {
	t := m.box.text
	if t == "" {
		return true
	}
	if containsFold(ep.Name, t) || containsFold(ep.Type, t) || containsFold(ep.State, t) {
		return true
	}
	for _, f := range ep.Flags {
		if containsFold(string(f.Kind), t) {
			return true
		}
	}
	for _, ix := range ep.Indexes {
		if containsFold(ix.Name, t) {
			return true
		}
	}
	return false
}

func (m *endpointsModel) Update(msg tea.Msg) tea.Cmd {
	if _, ok := msg.(snapMsg); ok {
		m.follow()
		return nil
	}
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	if m.box.active {
		if m.box.key(km) {
			m.cursor = 0
		}
		m.follow()
		return nil
	}
	k := &m.ctx.keys
	vis := m.visible()
	n := len(vis)
	switch {
	case key.Matches(km, k.Up):
		m.cursor--
	case key.Matches(km, k.Down):
		m.cursor++
	case key.Matches(km, k.PageUp):
		m.cursor -= max(1, m.height/2)
	case key.Matches(km, k.PageDown):
		m.cursor += max(1, m.height/2)
	case key.Matches(km, k.Top):
		m.cursor = 0
	case key.Matches(km, k.Bottom):
		m.cursor = n - 1
	case key.Matches(km, k.Filter):
		m.box.open()
	case key.Matches(km, k.Back):
		m.box.set("")
	case key.Matches(km, k.Detail):
		if m.cursor >= 0 && m.cursor < n {
			name := vis[m.cursor].Name
			m.expanded[name] = !m.expanded[name]
		}
	}
	m.follow()
	return nil
}

// follow clamps the cursor and scrolls so the selected endpoint is on
// screen; the list is short, so its lines are built whole.
func (m *endpointsModel) follow() {
	_, _, _, n := m.build()
	m.cursor = max(0, min(m.cursor, n-1))
	_, cursorLine, cursorEnd, _ := m.build() // the clamped cursor's lines
	bh := m.height
	// Its whole block (an expanded endpoint's indexes) when it fits,
	// and always its first line.
	if cursorEnd >= m.offset+bh {
		m.offset = cursorEnd - bh + 1
	}
	if cursorLine < m.offset+1 {
		m.offset = max(0, cursorLine-1)
	}
	if cursorLine >= m.offset+bh {
		m.offset = cursorLine - bh + 1
	}
}

func (m *endpointsModel) View() string {
	out, _, _, _ := m.build()
	if off := max(0, min(m.offset, len(out)-2)); off > 0 {
		out = append(out[:1:1], out[1+off:]...)
	}
	return lines(out)
}

// build returns the lines, the first and last lines of the cursor's
// endpoint, and how many endpoints are listed.
func (m *endpointsModel) build() ([]string, int, int, int) {
	st := &m.ctx.styles
	if len(m.ctx.snap.Endpoints) == 0 {
		return []string{"", st.Dim.Render("  no Vector Search endpoints observed")}, 0, 0, 0
	}
	eps := m.visible()
	barW := m.barWidth()
	head := "  " + fit("ENDPOINT", m.nameWidth(), "") + " "
	if barW > 0 {
		head += fit("STORAGE", barW+2, "") + " "
	}
	head += fit("%", 6, "") + " "
	if !m.tiny() {
		head += fit("THRU", 4, "") + " "
	}
	head += fit("TIME TO FULL", 14, "") + " " + fit("FLAG", 17, "") + " "
	switch {
	case m.tiny():
	case m.narrow():
		head += "ROWS/LIMIT"
	default:
		head += fit("ROWS/LIMIT", 18, "") + " " + fit("STATE", 12, "") + " TYPE"
	}
	out := []string{st.ColHead.Render(strings.TrimRight(head, " "))}
	if len(eps) == 0 {
		return append(out, st.Dim.Render(fmt.Sprintf("  no endpoint matches %q (esc clears)", m.box.text))), 0, 0, 0
	}
	cursorLine, cursorEnd := 0, 0
	for i, ep := range eps {
		if i == m.cursor {
			cursorLine = len(out)
		}
		out = append(out, m.endpointLines(ep, i == m.cursor, barW)...)
		if i == m.cursor {
			cursorEnd = len(out) - 1
		}
	}
	return out, cursorLine, cursorEnd, len(eps)
}

// narrow: below 100 columns the storage bar, STATE and TYPE give way so
// ROWS/LIMIT stays whole ("1.2M/2.0M"; the line under it says where the
// limit comes from, and a state other than ONLINE is an ENDPOINT_STATE
// flag).
func (m *endpointsModel) narrow() bool { return m.width < 100 }

// tiny: below 80 columns THRU and ROWS/LIMIT drop and ENDPOINT narrows
// (the notes line under each endpoint still says its limit).
func (m *endpointsModel) tiny() bool { return m.width < 80 }

func (m *endpointsModel) nameWidth() int {
	if m.tiny() {
		return 12
	}
	return 18
}

func (m *endpointsModel) barWidth() int {
	switch {
	case m.narrow():
		return 0
	case m.width >= 140:
		return 20
	}
	return 10
}

// limitTag is the short form of a limit's source on the endpoint's line.
var limitTag = map[model.LimitSource]string{
	model.LimitPublished: "pub", model.LimitConfig: "cfg", model.LimitTag: "tag", model.LimitLearned: "lrn",
}

// endpointLines: the endpoint's line (storage bar, usage, throughput
// utilisation, time to full, worst flag, rows/limit with the limit's
// source, state, type); the limit's reason with the write rate; the server's error; the
// details of flags other than storage; its indexes when expanded. Every
// piece of server text goes through textfmt.Line.
func (m *endpointsModel) endpointLines(ep *model.EndpointView, sel bool, barW int) []string {
	out := []string{m.endpointRow(ep, sel, barW)}
	out = append(out, m.endpointNotes(ep)...)
	return append(out, m.endpointIndexes(ep, sel)...)
}

// endpointRow is the endpoint's line in the table's columns.
func (m *endpointsModel) endpointRow(ep *model.EndpointView, sel bool, barW int) string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	cur := "  "
	if sel {
		cur = g.Cursor + " "
	}
	f, _ := worstFlag(ep.Flags)
	fill := int(math.Round(math.Min(ep.Usage, 1) * float64(barW)))
	bar := "[" + strings.Repeat(g.BarFull, fill) + strings.Repeat(g.BarEmpty, max(0, barW-fill)) + "]"
	style := st.OK
	if f.Severity != "" {
		style = st.ForSeverity(f.Severity)
	}
	eta := "not growing"
	if ep.ETAFull != nil {
		eta = "full in " + textfmt.Duration(*ep.ETAFull)
	}
	if ep.Usage >= 1 || ep.Exhausted {
		eta = "full"
	}
	usage := "?"
	if ep.RowLimit > 0 {
		usage = fmt.Sprintf("%.1f%%", ep.Usage*100)
	}
	thr := "-"
	if t := ep.Throughput; t != nil {
		thr = fmt.Sprintf("%.0f%%", *t)
	}
	name := fit(textfmt.Line(ep.Name), m.nameWidth(), g.Ellipsis)
	if sel {
		name = st.Bold.Render(name)
	}
	line := cur + name + " "
	if barW > 0 {
		line += style.Render(bar) + " "
	}
	line += fit(usage, 6, "") + " "
	if m.tiny() {
		return line + fit(eta, 14, "") + " " + m.flagCell(f)
	}
	line += fit(thr, 4, "") + " " + fit(eta, 14, "") + " "
	return line + m.flagCell(f) + m.rowsCells(ep)
}

// flagCell is the worst flag's badge, 17 wide, its severity in colour
// rather than words.
func (m *endpointsModel) flagCell(f model.Flag) string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	if f.Kind == "" {
		return fit("", 17, "")
	}
	badge := flagLabel(f, g)
	badge = strings.Replace(badge, " CRIT ", " ", 1)
	badge = strings.Replace(badge, " WARN ", " ", 1)
	b := fit(badge, 17, g.Ellipsis)
	if f.Severity == model.SeverityCritical {
		return st.CritBadge.Render(b)
	}
	return st.Warn.Render(b)
}

// rowsCells is ROWS/LIMIT (with the limit's source), then STATE and TYPE
// when the terminal is wide enough.
func (m *endpointsModel) rowsCells(ep *model.EndpointView) string {
	g := m.ctx.glyphs
	if m.narrow() {
		short := "?"
		if ep.RowLimit > 0 {
			short = textfmt.CountShort(ep.RowLimit)
		}
		return " " + textfmt.CountShort(ep.Rows) + "/" + short
	}
	limit := "?"
	if ep.RowLimit > 0 {
		limit = textfmt.CountShort(ep.RowLimit) + " " + limitTag[ep.RowLimitSource]
	}
	return " " + fit(textfmt.CountShort(ep.Rows)+"/"+limit, 18, "") + " " +
		fit(textfmt.Line(textfmt.OrDash(ep.State)), 12, g.Ellipsis) + " " + textfmt.Line(ep.Type)
}

// endpointNotes are the lines under the row: where the limit comes from
// and how fast rows arrive, the server's error, and the flags the row
// does not already say.
func (m *endpointsModel) endpointNotes(ep *model.EndpointView) []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	why := "no row limit: usage unknown"
	switch {
	case ep.RowLimitWhy != "":
		why = model.LimitLine(textfmt.Line(ep.RowLimitWhy))
	case ep.RowLimit > 0:
		why = "limit " + textfmt.CountShort(ep.RowLimit)
	}
	why = fmt.Sprintf("writes %s/min  %s %s", textfmt.CountShort(int64(math.Round(ep.WriteRowsPerMin))), g.VerticalSep, why)
	out := []string{st.Dim.Render(truncLine("      "+why, max(m.width, 20), g.Ellipsis))}
	if ep.LastError != nil {
		out = append(out, indentWrapped(wrapIndent(st.Crit.Render(textfmt.Line(ep.LastError.Line())), m.width-4, "      "))...)
	}
	for _, fl := range ep.Flags {
		switch fl.Kind {
		case model.FlagCapacity, model.FlagExhausted:
			continue // the line, the bar and the error say it
		}
		d := flagLabel(fl, g) + ": " + textfmt.Line(fl.Detail)
		out = append(out, st.ForSeverity(fl.Severity).Render(truncLine("      "+d, max(m.width, 20), g.Ellipsis)))
	}
	return out
}

// endpointIndexes lists the indexes of an expanded endpoint, or says how
// many there are under the selected one.
func (m *endpointsModel) endpointIndexes(ep *model.EndpointView, sel bool) []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	if !m.expanded[ep.Name] {
		n := ep.IndexCount()
		if n == 0 || !sel {
			return nil
		}
		noun := "indexes"
		if n == 1 {
			noun = "index"
		}
		return []string{st.Dim.Render(fmt.Sprintf("      %d %s (enter expands)", n, noun))}
	}
	var out []string
	if len(ep.Indexes) == 0 {
		out = append(out, "      no indexes")
	}
	for _, ix := range ep.Indexes {
		ready := "ready"
		if !ix.Ready {
			ready = g.Warn + " NOT READY"
		}
		typ := textfmt.OrDash(ix.Type)
		if ix.Dimension > 0 {
			typ += fmt.Sprintf(" %dd", ix.Dimension)
		}
		l := fmt.Sprintf("      - %s  %s  %s  %s", fit(textfmt.Line(ix.Name), 28, g.Ellipsis), fit(textfmt.Line(typ), 19, g.Ellipsis),
			fit(textfmt.CountShort(ix.Rows)+" rows", 15, ""), ready)
		if ix.Message != "" {
			l += "  " + textfmt.Line(ix.Message)
		}
		l = truncLine(l, max(m.width, 20), g.Ellipsis)
		if !ix.Ready {
			l = st.Warn.Render(l)
		}
		out = append(out, l)
	}
	return out
}

// indentWrapped indents the wrapped lines of an error under the endpoint.
func indentWrapped(ls []string) []string {
	for i := range ls {
		ls[i] = "  " + ls[i]
	}
	return ls
}

// containsFold is strings.Contains, ignoring case; sub is already lower.
// The Endpoints and Events views filter with it; operations are filtered
// by model.FilterSpec.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}
