package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// warehousesModel is the Warehouses view: each warehouse as the last
// listing described it (name, id, state, size, clusters), dbxtop's
// running and queued counts on it and its operations' flags by kind;
// below them, with --proxy, each dbxtop proxy read: whether it answered,
// its version and what it last said (docs/proxy.md, "Many proxies").
// Warehouses that operations name but the listing did not are shown with
// an unknown state. The view only reads the snapshot: it never calls a
// warehouse, so a stopped one is shown stopped and stays stopped.
type warehousesModel struct {
	ctx           *programContext
	width, height int
	rows          []whRow // built per snapshot, never per frame
	// proxies are the proxy section's lines, built per snapshot (and
	// per size); none without --proxy.
	proxies []string
	listCursor
	box filterBox // name, id or state
}

func (m *warehousesModel) Capturing() bool { return m.box.active }

// visible are the rows the filter lets through.
func (m *warehousesModel) visible() []whRow {
	if m.box.text == "" {
		return m.rows
	}
	var out []whRow
	for _, r := range m.rows {
		if containsFold(r.info.Name, m.box.text) || containsFold(r.info.ID, m.box.text) || containsFold(r.info.State, m.box.text) {
			out = append(out, r)
		}
	}
	return out
}

// whRow is one warehouse's line.
type whRow struct {
	info            model.WarehouseInfo
	listed          bool // in the last listing (else: named by operations only)
	running, queued int
	flags           map[model.FlagKind][2]int // kind → warning, critical counts
}

func (m *warehousesModel) SetSize(w, h int) { m.width, m.height = w, h; m.buildProxies(); m.clamp() }

func (m *warehousesModel) ShortHelp() []key.Binding {
	k := &m.ctx.keys
	return []key.Binding{k.DrillWarehouse, k.Filter, k.Down, k.Up}
}

func (m *warehousesModel) FullHelp() [][]key.Binding {
	k := &m.ctx.keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom, k.DrillWarehouse, k.Filter, k.Back}}
}

func (m *warehousesModel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case snapMsg:
		m.build()
		m.buildProxies()
	case tea.KeyMsg:
		if m.box.active {
			if m.box.key(msg) {
				m.offset, m.cursor = 0, 0
			}
			break
		}
		k := &m.ctx.keys
		switch {
		case m.move(msg, k, len(m.visible()), m.rowsShown()):
		case key.Matches(msg, k.Filter):
			m.box.open()
		case key.Matches(msg, k.Back):
			m.box.set("")
		}
	}
	m.clamp()
	return nil
}

// build gathers the rows from the snapshot: listed warehouses in listing
// order, then those only operations name, by id.
func (m *warehousesModel) build() {
	s := &m.ctx.snap
	byID := map[string]int{}
	m.rows = m.rows[:0]
	if l := s.Workspace.Listing; l != nil {
		for _, w := range l.Warehouses {
			byID[w.ID] = len(m.rows)
			m.rows = append(m.rows, whRow{info: w, listed: true})
		}
	}
	for _, op := range s.Operations {
		i, ok := byID[op.WarehouseID]
		if !ok {
			if op.WarehouseID == "" {
				continue
			}
			i = len(m.rows)
			byID[op.WarehouseID] = i
			m.rows = append(m.rows, whRow{info: model.WarehouseInfo{ID: op.WarehouseID}})
		}
		r := &m.rows[i]
		switch {
		case op.Gone:
		case op.State == model.StateRunning:
			r.running++
		case op.State == model.StatePending:
			r.queued++
		}
		for _, f := range op.Flags {
			if r.flags == nil {
				r.flags = map[model.FlagKind][2]int{}
			}
			c := r.flags[f.Kind]
			if f.Severity == model.SeverityCritical {
				c[1]++
			} else {
				c[0]++
			}
			r.flags[f.Kind] = c
		}
	}
}

// selected is the warehouse under the cursor, or nil.
func (m *warehousesModel) selected() *whRow {
	rs := m.visible()
	if m.cursor < 0 || m.cursor >= len(rs) {
		return nil
	}
	return &rs[m.cursor]
}

func (m *warehousesModel) rowsShown() int { return max(1, m.height-1-len(m.proxies)) }

// buildProxies renders the proxy section: a blank line, a warning when
// the proxies run different versions, a heading and one line per proxy
// (at most half the view: the rest is counted).
func (m *warehousesModel) buildProxies() {
	m.proxies = m.proxies[:0]
	ps := m.ctx.snap.Workspace.Proxies
	if len(ps) == 0 {
		return
	}
	st, g := &m.ctx.styles, m.ctx.glyphs
	out := []string{""}
	if skew := model.ProxyVersionSkew(ps); skew != "" {
		out = append(out, st.Warn.Render(fit(g.Warn+" "+skew, m.width, g.Ellipsis)))
	}
	nameW := 22
	if m.width < 80 {
		nameW = 16
	}
	out = append(out, st.ColHead.Render(fit("  "+fit("PROXY", nameW, "")+" "+fit("STATE", 5, "")+" "+fit("VERSION", 10, "")+" "+
		fit("UPSTREAM", 9, "")+" "+rjust("OPS", 6)+" LAST ANSWER", m.width, "")))
	room := max(1, m.height/2-len(out))
	now := m.ctx.snap.GeneratedAt
	for i, p := range ps {
		if i == room-1 && len(ps) > room {
			out = append(out, st.Dim.Render(fmt.Sprintf("  … %d more proxies (snapshot --json lists them)", len(ps)-i)))
			break
		}
		name := p.Name
		if p.Workspace != "" {
			name = p.Workspace + "/" + name
		}
		state, last, ops := "up", "-", strconv.Itoa(p.Operations)
		if !p.LastOK.IsZero() {
			last = textfmt.Age(now, p.LastOK) + " ago"
		}
		if !p.Up {
			// What it saw since its last answer is unknown: "?" with why.
			state, ops, last = "DOWN", "?", "? "+p.Reason
			if !p.LastOK.IsZero() {
				last = "? since " + textfmt.Age(now, p.LastOK) + ": " + p.Reason
			}
		}
		line := "  " + fit(name, nameW, g.Ellipsis) + " " + fit(state, 5, "") + " " + fit(textfmt.OrDash(p.Version), 10, g.Ellipsis) + " " +
			fit(textfmt.OrDash(p.Upstream), 9, g.Ellipsis) + " " + rjust(ops, 6) + " "
		line += fit(last, max(1, m.width-ansi.StringWidth(line)), g.Ellipsis)
		if !p.Up {
			line = st.Crit.Render(line)
		}
		out = append(out, line)
	}
	m.proxies = out
}

func (m *warehousesModel) clamp() { m.listCursor.clamp(len(m.visible()), m.rowsShown()) }

// whColumns are the widths (0: dropped): NAME takes what is left up to
// 24. Below 100 columns ID narrows and SIZE drops; below 80 CLUSTERS
// drops (docs/operator-guide.md, "Small terminals"). FLAGS gets the rest.
func (m *warehousesModel) whColumns() (name, id, size, clusters int) {
	id, size, clusters = 16, 9, 8
	switch {
	case m.width < 80:
		id, size, clusters = 10, 0, 0
	case m.width < 100:
		id, size = 10, 0
	}
	fixed := 2 + id + 1 + 9 + 1 + 4 + 1 + 6 + 1 + 26
	for _, c := range []int{size, clusters} {
		if c > 0 {
			fixed += c + 1
		}
	}
	return max(10, min(24, m.width-fixed)), id, size, clusters
}

func (m *warehousesModel) View() string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	nameW, idW, sizeW, clW := m.whColumns()
	head := "  " + fit("NAME", nameW, "") + " " + fit("ID", idW, "") + " " + fit("STATE", 9, "")
	if sizeW > 0 {
		head += " " + fit("SIZE", sizeW, "")
	}
	if clW > 0 {
		head += " " + fit("CLUSTERS", clW, "")
	}
	head += " " + rjust("RUN", 4) + " " + rjust("QUEUED", 6) + " FLAGS"
	out := []string{st.ColHead.Render(head)}
	rows := m.visible()
	switch {
	case len(rows) == 0 && m.box.text != "":
		return lines(append(append(out, st.Dim.Render("  no warehouse matches the filter (esc clears)")), m.proxies...))
	case len(rows) == 0:
		return lines(append(append(out, st.Dim.Render("  no warehouse listed yet, and no operation names one")), m.proxies...))
	}
	end := min(len(rows), m.offset+m.rowsShown())
	for i := m.offset; i < end; i++ {
		r := &rows[i]
		name, state, size := textfmt.Line(r.info.Name), textfmt.Line(r.info.State), textfmt.OrDash(textfmt.Line(r.info.Size))
		if !r.listed {
			name, state, size = "?", "?", "?" // not in the listing: dbxtop cannot tell
		}
		mark := "  "
		if i == m.cursor {
			mark = g.Cursor + " "
		}
		line := mark + fit(textfmt.OrDash(name), nameW, g.Ellipsis) + " " + fit(textfmt.Line(r.info.ID), idW, g.Ellipsis) + " " + fit(textfmt.OrDash(state), 9, g.Ellipsis)
		if sizeW > 0 {
			line += " " + fit(size, sizeW, g.Ellipsis)
		}
		if clW > 0 {
			line += " " + fit(clustersCell(r.info), clW, "")
		}
		line += " " + rjust(strconv.Itoa(r.running), 4) + " " + rjust(strconv.Itoa(r.queued), 6) + " "
		line += m.flagsCell(r, max(1, m.width-ansi.StringWidth(line)))
		switch {
		case i == m.cursor:
			line = st.Selected.Render(fit(line, m.width, ""))
		case r.listed && strings.EqualFold(r.info.State, "STOPPED"):
			line = st.Dim.Render(line)
		}
		out = append(out, line)
	}
	return lines(append(out, m.proxies...))
}

// clustersCell is "current/min-max", "?" for a count the listing left out.
func clustersCell(w model.WarehouseInfo) string {
	n := func(p *int) string {
		if p == nil {
			return "?"
		}
		return strconv.Itoa(*p)
	}
	if w.Clusters == nil && w.MinClusters == nil && w.MaxClusters == nil {
		return "?"
	}
	return n(w.Clusters) + "/" + n(w.MinClusters) + "-" + n(w.MaxClusters)
}

// flagsCell is the row's flags by kind, worst severity symbol and count,
// kinds with a critical flag first ("●INACT 1 ▲UNCLSD 2"), without the spaces
// before the counts when that is what fits w; "-" for none.
func (m *warehousesModel) flagsCell(r *whRow, w int) string {
	g := m.ctx.glyphs
	if len(r.flags) == 0 {
		return "-"
	}
	var parts []string
	kinds := model.OperationFlagKinds()
	// Critical kinds first, each group in model's order of kinds.
	slices.SortStableFunc(kinds, func(a, b model.FlagKind) int { return r.flags[b][1] - r.flags[a][1] })
	for _, k := range kinds {
		c, ok := r.flags[k]
		if !ok {
			continue
		}
		sym := g.Warn
		if c[1] > 0 {
			sym = g.Crit
		}
		parts = append(parts, fmt.Sprintf("%s%s %d", sym, shortKind[k], c[0]+c[1]))
	}
	s := strings.Join(parts, " ")
	if ansi.StringWidth(s) > w {
		s = strings.Join(parts, ",")
		s = strings.ReplaceAll(s, " ", "")
	}
	return fit(s, w, g.Ellipsis)
}
