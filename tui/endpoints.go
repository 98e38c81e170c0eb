package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// endpointsView: one line per endpoint with its capacity bar, %, rows and
// limit, time to full and flag badge; a second line with the server's
// error (message and request id) when there is one; its indexes when
// expanded with enter.
func (m *Model) endpointsView() []string {
	st := &m.ctx.styles
	eps := m.snap.Endpoints
	if len(eps) == 0 {
		return []string{"", st.Dim.Render("  no Vector Search endpoints observed")}
	}
	barW := 10
	if m.ctx.width >= 110 {
		barW = 20
	}
	head := "  " + fit("ENDPOINT", 18, "") + " " + fit("USAGE", barW+2, "") + " " + fit("%", 6, "") + " " +
		fit("FLAG", 15, "") + " " + fit("ROWS/LIMIT", 13, "") + " " + fit("TIME TO FULL", 14, "") + " " + fit("STATE", 10, "") + " TYPE"
	out := []string{st.ColHead.Render(head)}
	cursorLine := 0
	for i := range eps {
		ep := &eps[i]
		if i == m.epCursor {
			cursorLine = len(out)
		}
		out = append(out, m.endpointLines(ep, i == m.epCursor, barW)...)
	}
	// Keep the selected endpoint on screen; the list is short, so the
	// lines are built whole and the window is cut from them.
	bh := m.bodyHeight()
	if cursorLine < m.epOffset+1 {
		m.epOffset = max(0, cursorLine-1)
	}
	if cursorLine >= m.epOffset+bh {
		m.epOffset = cursorLine - bh + 1
	}
	if m.epOffset > 0 {
		out = append(out[:1:1], out[1+m.epOffset:]...)
	}
	return out
}

func (m *Model) endpointLines(ep *model.EndpointView, sel bool, barW int) []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	cur := "  "
	if sel {
		cur = g.Cursor + " "
	}
	f, _ := worstFlag(ep.Flags)
	sev := f.Severity
	fill := int(math.Round(math.Min(ep.Usage, 1) * float64(barW)))
	bar := "[" + strings.Repeat(g.BarFull, fill) + strings.Repeat(g.BarEmpty, barW-fill) + "]"
	style := st.OK
	switch sev {
	case model.SeverityCritical:
		style = st.Crit
	case model.SeverityWarning:
		style = st.Warn
	}
	badge := ""
	if f.Kind != "" {
		badge = flagLabel(f, g)
		badge = strings.Replace(badge, " CRIT ", " ", 1)
		badge = strings.Replace(badge, " WARN ", " ", 1)
	}
	eta := "not growing"
	if ep.ETAFull != nil {
		eta = "full in " + textfmt.Duration(*ep.ETAFull)
	}
	if ep.Usage >= 1 || ep.Exhausted {
		eta = "full"
	}
	limit := "?"
	if ep.RowLimit > 0 {
		limit = textfmt.CountShort(ep.RowLimit)
	}
	name := fit(ep.Name, 18, g.Ellipsis)
	if sel {
		name = st.Bold.Render(name)
	}
	line := cur + name + " " + style.Render(bar) + " " + fit(fmt.Sprintf("%.1f%%", ep.Usage*100), 6, "") + " "
	if badge != "" {
		b := fit(badge, 15, "")
		if sev == model.SeverityCritical {
			line += st.CritBadge.Render(b)
		} else {
			line += st.Warn.Render(b)
		}
	} else {
		line += fit("", 15, "")
	}
	line += " " + fit(textfmt.CountShort(ep.Rows)+"/"+limit, 13, "") + " " + fit(eta, 14, "") + " " +
		fit(ep.State, 10, g.Ellipsis) + " " + ep.Type
	out := []string{line}
	if ep.LastError != nil {
		out = append(out, wrapIndent(st.Crit.Render(errorLine(ep.LastError)), m.ctx.width-4, "      ")...)
		out[len(out)-1] = "  " + out[len(out)-1]
		for i := 1; i < len(out)-1; i++ {
			out[i] = "  " + out[i]
		}
	}
	if m.epExpanded[ep.Name] {
		if len(ep.Indexes) == 0 {
			out = append(out, "      no indexes")
		}
		for _, ix := range ep.Indexes {
			ready := "ready"
			if !ix.Ready {
				ready = "NOT READY"
			}
			l := fmt.Sprintf("      - %s  %s  %s", fit(ix.Name, 28, g.Ellipsis), fit(textfmt.CountShort(ix.Rows)+" rows", 12, ""), ready)
			if ix.Message != "" {
				l += "  " + ix.Message
			}
			out = append(out, l)
		}
	} else if len(ep.Indexes) > 0 && sel {
		noun := "indexes"
		if len(ep.Indexes) == 1 {
			noun = "index"
		}
		out = append(out, st.Dim.Render(fmt.Sprintf("      %d %s (enter expands)", len(ep.Indexes), noun)))
	}
	return out
}
