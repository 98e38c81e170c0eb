package report

import (
	"strings"
	"unicode"

	"github.com/mattn/go-runewidth"

	"github.com/dbxtop/dbxtop/textfmt"
)

// clean makes remote text (SQL, user names, server messages) safe for one
// table cell: control characters, including ANSI escape introducers and
// newlines, become spaces and runs of spaces collapse; in ASCII mode every
// non-ASCII rune becomes "?".
func clean(s string, ascii bool) string {
	s = textfmt.Line(s) // escape sequences, C1 and bidi controls go first
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsControl(r) || unicode.IsSpace(r):
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		case ascii && r > unicode.MaxASCII:
			r = '?'
		case !unicode.IsPrint(r):
			r = '?'
		}
		space = false
		b.WriteRune(r)
	}
	return strings.TrimRight(b.String(), " ")
}

// width is the number of terminal cells s takes.
func width(s string) int { return runewidth.StringWidth(s) }

// cut shortens s to at most n cells, marking the cut.
func cut(s string, n int, ascii bool) string {
	if n <= 0 {
		return ""
	}
	if width(s) <= n {
		return s
	}
	tail := "…"
	if ascii {
		tail = "..."
	}
	if n <= width(tail) {
		return runewidth.Truncate(s, n, "")
	}
	return runewidth.Truncate(s, n, tail)
}

// pad right-pads s with spaces to n cells.
func pad(s string, n int) string {
	if w := width(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}
