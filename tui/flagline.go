package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
)

// shortKind is a flag kind's name in a narrow header; the Help view's
// legend gives each next to its full name.
var shortKind = map[model.FlagKind]string{
	model.FlagInactive:      "INACT",
	model.FlagStale:         "STALE",
	model.FlagUnclosed:      "UNCLSD",
	model.FlagCloseFailed:   "CLS_FAIL",
	model.FlagReaped:        "REAPED",
	model.FlagExhausted:     "EXHAUST",
	model.FlagCapacity:      "CAP",
	model.FlagEndpointState: "EP_STATE",
	model.FlagThroughput:    "TPUT",
	model.FlagIndexQuota:    "IDX_QUOTA",
	model.FlagIndexNotReady: "IDX_NREADY",
}

// kindForm is how much room a flag count takes: the full name, the short
// name, or the short name with "(1c)" for "(1 crit)".
type kindForm int

const (
	formFull kindForm = iota
	formShort
	formCompact
)

// raisedKinds are the kinds of ks with a count, in ks's order.
func (c *flagCounts) raised(ks []model.FlagKind) []model.FlagKind {
	var out []model.FlagKind
	for _, k := range ks {
		if c.warn[k]+c.crit[k] > 0 {
			out = append(out, k)
		}
	}
	return out
}

// flagLines are the header's flag counts: one line when every raised kind
// fits, else operations and endpoints on a line each. A raised kind is
// never dropped silently: names shorten first, and only past that is a
// count cut, with the cut kinds named after the Cut glyph.
func (m *Model) flagLines() []string {
	st, g, w := &m.ctx.styles, m.ctx.glyphs, m.ctx.width
	c := &m.counts
	ops, eps := c.raised(model.OperationFlagKinds()), c.raised(model.EndpointFlagKinds())
	opsHead := []string{"flags"}
	if len(ops) == 0 {
		opsHead = append(opsHead, st.OK.Render("no operation flags"))
	}
	epHead := fmt.Sprintf("endpoints %d", len(m.ctx.snap.Endpoints))
	for _, f := range []kindForm{formFull, formShort} {
		parts := append(append(append([]string{}, opsHead...), m.cells(ops, f)...), g.VerticalSep+" "+epHead)
		if l := strings.Join(append(parts, m.cells(eps, f)...), " "); ansi.StringWidth(l) <= w {
			return []string{l}
		}
	}
	return append(m.fitKinds(opsHead, ops, w), m.fitKinds([]string{epHead}, eps, w)...)
}

// cells renders the counts of ks in form f.
func (m *Model) cells(ks []model.FlagKind, f kindForm) []string {
	out := make([]string, 0, len(ks))
	for _, k := range ks {
		out = append(out, m.countCellForm(k, m.counts.warn[k], m.counts.crit[k], f))
	}
	return out
}

// maxKindLines bounds the lines one group of counts may take.
const maxKindLines = 2

// fitKinds is head and the counts of ks in the widest form that fits one
// line of width w, else wrapped on up to maxKindLines lines; past the most
// compact form, warning-only kinds are cut first and every cut kind is
// named after the Cut glyph.
func (m *Model) fitKinds(head []string, ks []model.FlagKind, w int) []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	for _, f := range []kindForm{formFull, formShort, formCompact} {
		if l := strings.Join(append(append([]string{}, head...), m.cells(ks, f)...), " "); ansi.StringWidth(l) <= w {
			return []string{l}
		}
	}
	for _, f := range []kindForm{formShort, formCompact} {
		if ls := wrapCells(append(append([]string{}, head...), m.cells(ks, f)...), w); len(ls) <= maxKindLines {
			return ls
		}
	}
	kept := append([]model.FlagKind{}, ks...)
	var cut []string
	for len(kept) > 0 {
		victim := len(kept) - 1
		for i := len(kept) - 1; i >= 0; i-- {
			if m.counts.crit[kept[i]] == 0 {
				victim = i
				break
			}
		}
		cut = append([]string{shortKind[kept[victim]]}, cut...)
		kept = append(kept[:victim:victim], kept[victim+1:]...)
		tail := st.Warn.Render(g.Cut + " " + strings.Join(cut, ","))
		if ls := wrapCells(append(append(append([]string{}, head...), m.cells(kept, formCompact)...), tail), w); len(ls) <= maxKindLines {
			return ls
		}
	}
	return []string{truncLine(strings.Join(append(head, st.Warn.Render(g.Cut+" "+strings.Join(cut, ","))), " "), w, g.Ellipsis)}
}

// wrapCells packs cells, space-separated, into lines of width w; later
// lines are indented so they read as a continuation.
func wrapCells(cells []string, w int) []string {
	var out []string
	cur := ""
	for _, c := range cells {
		switch {
		case cur == "":
			cur = c
		case ansi.StringWidth(cur)+1+ansi.StringWidth(c) <= w:
			cur += " " + c
		default:
			out = append(out, cur)
			cur = "  " + c
		}
	}
	return append(out, cur)
}

// countCellForm is "INACTIVE 3" with its severity as a symbol, so it
// reads without colour: "● INACTIVE 3(1 crit)"; shorter forms use the
// short name and "(1c)".
func (m *Model) countCellForm(k model.FlagKind, warn, crit int, f kindForm) string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	name, critWord := string(k), " crit"
	if f >= formShort {
		name = shortKind[k]
	}
	if f == formCompact {
		critWord = "c"
	}
	n := warn + crit
	switch {
	case crit > 0 && warn > 0:
		return st.Crit.Render(fmt.Sprintf("%s %s %d(%d%s)", g.Crit, name, n, crit, critWord))
	case crit > 0:
		return st.Crit.Render(fmt.Sprintf("%s %s %d", g.Crit, name, n))
	case warn > 0:
		return st.Warn.Render(fmt.Sprintf("%s %s %d", g.Warn, name, n))
	}
	return ""
}
