package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// shortID is the first 8 characters of a statement id and an ellipsis:
// enough to tell operations apart on screen; the detail shows it whole.
func shortID(id string, ell string) string {
	if ansi.StringWidth(id) <= 8 {
		return id
	}
	return ansi.Truncate(id, 8, "") + ell // never splits a rune
}

// fit truncates s to w cells (with tail) and pads it with spaces to
// exactly w cells, so columns line up whatever the content.
func fit(s string, w int, tail string) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		s = ansi.Truncate(s, w, tail)
		sw = ansi.StringWidth(s)
	}
	if sw < w {
		s += strings.Repeat(" ", w-sw)
	}
	return s
}

// oneLine flattens SQL text to one line for the table.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") && !strings.Contains(s, "  ") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// worstFlag is the flag the table shows for a row, and how many more
// there are. Private until model's severity helpers land.
//
// STALE comes first whatever its severity: when dbxtop's own polls fail,
// every other flag on the row rests on old evidence, and the row must not
// blame the client for dbxtop's blindness.
func worstFlag(fs []model.Flag) (model.Flag, int) {
	var w model.Flag
	for _, f := range fs {
		if f.Kind == model.FlagStale {
			return f, len(fs) - 1
		}
	}
	for _, f := range fs {
		r, wr := f.Severity.Rank(), w.Severity.Rank()
		// EXHAUSTED says more than CAPACITY at the same severity.
		if r > wr || w.Kind == "" || (r == wr && f.Kind == model.FlagExhausted) {
			w = f
		}
	}
	if len(fs) == 0 {
		return w, 0
	}
	return w, len(fs) - 1
}

// flagCellMax is the widest the FLAG column gets: room for one flag in
// full ("● CRIT CLOSE_FAILED") or two in short form.
const flagCellMax = 19

// flagCell is a row's flags in at most w cells: one flag in full, several
// each by its symbol and short name ("●CLS_FAIL ▲UNCLSD", the Help view's
// legend spells them out), and only when even that does not fit the worst
// flag and how many more ("● CRIT CLOSE_FAILED+1").
func flagCell(fs []model.Flag, g Glyphs, w int) string {
	f, more := worstFlag(fs)
	if more == 0 {
		return flagLabel(f, g)
	}
	if all := compactFlags(fs, g); ansi.StringWidth(all) <= w {
		return all
	}
	return flagLabel(f, g) + "+" + strconv.Itoa(more)
}

// compactFlags is every flag by symbol and short name, worst first.
func compactFlags(fs []model.Flag, g Glyphs) string {
	f, _ := worstFlag(fs)
	parts := []string{flagSym(f, g) + shortKind[f.Kind]}
	for _, o := range fs {
		if o != f {
			parts = append(parts, flagSym(o, g)+shortKind[o.Kind])
		}
	}
	return strings.Join(parts, " ")
}

func flagSym(f model.Flag, g Glyphs) string {
	if f.Severity == model.SeverityCritical {
		return g.Crit
	}
	return g.Warn
}

// flagCellWidth is the width flagCell wants for fs with room to spare.
func flagCellWidth(fs []model.Flag, g Glyphs) int {
	return min(ansi.StringWidth(flagCell(fs, g, flagCellMax)), flagCellMax)
}

// flagLabel is "● CRIT INACTIVE" (or "!! CRIT INACTIVE" in ASCII): symbol
// and word, so severity reads without colour.
func flagLabel(f model.Flag, g Glyphs) string {
	switch f.Severity {
	case model.SeverityCritical:
		return g.Crit + " CRIT " + string(f.Kind)
	case model.SeverityWarning:
		return g.Warn + " WARN " + string(f.Kind)
	}
	return ""
}

// wrapWords wraps plain text at spaces to lines of at most w cells; a word
// longer than w is cut. Unlike ansi.Wrap it never breaks at a hyphen, so a
// request id or statement id stays whole (and copyable) when it fits.
func wrapWords(s string, w int) []string {
	if w <= 0 {
		return []string{s}
	}
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		line, lw := "", 0
		for _, word := range strings.Fields(para) {
			ww := ansi.StringWidth(word)
			for ww > w { // cut an over-long word
				if lw > 0 {
					lines = append(lines, line)
					line, lw = "", 0
				}
				head := ansi.Truncate(word, w, "")
				lines = append(lines, head)
				word = word[len(head):]
				ww = ansi.StringWidth(word)
			}
			switch {
			case ww == 0:
			case lw == 0:
				line, lw = word, ww
			case lw+1+ww <= w:
				line += " " + word
				lw += 1 + ww
			default:
				lines = append(lines, line)
				line, lw = word, ww
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// plural is n and its noun, singular for exactly one.
func plural[N ~int | ~int32 | ~int64](n N, one, many string) string {
	return textfmt.Plural(int64(n), one, many)
}
