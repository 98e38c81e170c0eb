package textfmt

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Server-supplied text (SQL, user and client names, warehouse, endpoint and
// index names, error bodies) is written by whoever can run a statement in the
// workspace. It is data, never terminal input: Line and Block are the one
// place that makes it harmless before it reaches a terminal, a file or a
// report. See docs/operator-guide.md, "Server text".
//
// What they do, in order:
//   - every byte that is not valid UTF-8 becomes U+FFFD (a lone 0x9B byte is
//     a CSI to a terminal in 8-bit mode);
//   - every whole escape sequence (CSI, OSC, DCS, APC, PM, SOS, and the
//     short ESC forms), as ansi.DecodeSequence delimits it, becomes one
//     visible ␛, so a reader sees that something was there;
//   - C0 controls and DEL become their Control Pictures (␇, ␡, …); tab and
//     newline become a space in Line and stay in Block; CR LF becomes LF in
//     Block;
//   - C1 controls (U+0080–U+009F, including the CSI U+009B), the bidi
//     embeddings/overrides U+202A–U+202E and isolates U+2066–U+2069, and the
//     line/paragraph separators U+2028/U+2029 become U+FFFD (Block keeps the
//     separators as a newline), so text can be neither executed nor visually
//     reordered.
//
// Printable text, including every other Unicode character, is unchanged.

const (
	escMark  = "␛"
	badMark  = "\uFFFD"
	ctrlBase = 0x2400 // U+2400 SYMBOL FOR NULL; U+2400+c pictures C0 control c
	delMark  = "␡"
)

// Line makes server text safe for a single-line field: the result has no
// control character at all, no escape sequence and no bidi control.
func Line(s string) string { return sanitize(s, false) }

// Block makes server text safe for a multi-line field (the SQL of the detail
// view, an error body): like Line, but newlines and tabs stay.
func Block(s string) string { return sanitize(s, true) }

// safeASCII reports whether s is printable ASCII only, the common case that
// needs no copy.
func safeASCII(s string, block bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			continue
		}
		if block && (c == '\n' || c == '\t') {
			continue
		}
		return false
	}
	return true
}

func sanitize(s string, block bool) string {
	if safeASCII(s, block) {
		return s
	}
	if !utf8.ValidString(s) {
		s = validUTF8(s)
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	var state byte
	for len(s) > 0 {
		seq, _, n, newState := ansi.DecodeSequence(s, state, nil)
		state = newState
		if n <= 0 { // the decoder always advances; guard anyway
			n = 1
			seq = s[:1]
		}
		s = s[n:]
		if seq != "" && seq[0] == ansi.ESC {
			b.WriteString(escMark)
			state = ansi.NormalState // an unterminated string swallowed the rest
			continue
		}
		writeRunes(&b, seq, block, s)
	}
	return b.String()
}

// writeRunes copies the printable runes of one grapheme cluster (or control
// byte) and replaces the rest; rest is the text after it, for CR LF.
func writeRunes(b *strings.Builder, seq string, block bool, rest string) {
	for _, r := range seq {
		switch {
		case r == '\n' || r == '\t':
			if block {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case r == '\r':
			switch {
			case block && strings.HasPrefix(rest, "\n"):
				// CR LF: the LF that follows is the newline.
			case !block:
				b.WriteByte(' ')
			default:
				b.WriteRune(ctrlBase + r)
			}
		case r < 0x20:
			b.WriteRune(ctrlBase + r)
		case r == 0x7f:
			b.WriteString(delMark)
		case r >= 0x80 && r <= 0x9f:
			b.WriteString(badMark)
		case r == 0x2028 || r == 0x2029:
			if block {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		case isBidiControl(r):
			b.WriteString(badMark)
		default:
			b.WriteRune(r)
		}
	}
}

// isBidiControl reports the explicit embedding, override and isolate
// controls; the implicit marks (LRM, RLM, ALM) cannot reorder a run and stay.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// validUTF8 replaces every invalid byte by U+FFFD (strings.ToValidUTF8 would
// fold a run into one and hide how much was there).
func validUTF8(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size <= 1 {
			b.WriteString(badMark)
			s = s[1:]
			continue
		}
		b.WriteString(s[:size])
		s = s[size:]
	}
	return b.String()
}

// Writer sanitises (as Block) everything written through it: for stderr,
// where error lines quote server text. Each Write is cleaned on its own, so
// callers write whole lines (fmt.Fprintln does).
type Writer struct{ W io.Writer }

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

func (w *Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.W, Block(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
