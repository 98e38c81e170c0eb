package textfmt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile payloads every output path is tested with (the TUI matrix reuses
// them through HostilePayloads).
func TestLineAndBlock(t *testing.T) {
	cases := []struct {
		name, in, line, block string
	}{
		{"plain", "SELECT 1", "SELECT 1", "SELECT 1"},
		{"unicode", "SELECT 'Grüße 日本'", "SELECT 'Grüße 日本'", "SELECT 'Grüße 日本'"},
		{"newline tab", "a\nb\tc", "a b c", "a\nb\tc"},
		{"crlf", "a\r\nb", "a  b", "a\nb"},
		{"lone cr", "abc\rX", "abc X", "abc␍X"},
		{"osc52 clipboard", "x\x1b]52;c;aGVsbG8=\x07y", "x␛y", "x␛y"},
		{"osc title st", "x\x1b]0;pwned\x1b\\y", "x␛y", "x␛y"},
		{"clear screen", "a\x1b[2Jb", "a␛b", "a␛b"},
		{"csi sgr", "\x1b[31mred\x1b[0m", "␛red␛", "␛red␛"},
		{"dcs", "a\x1bPq#0;2;0;0;0\x1b\\b", "a␛b", "a␛b"},
		{"apc", "a\x1b_Gf=100;AAAA\x1b\\b", "a␛b", "a␛b"},
		{"pm sos", "a\x1b^pm\x1b\\b\x1bXsos\x1b\\c", "a␛b␛c", "a␛b␛c"},
		{"unterminated osc", "a\x1b]0;title and the rest", "a␛", "a␛"},
		{"esc alone", "a\x1b", "a␛", "a␛"},
		{"esc short form", "a\x1bcb", "a␛b", "a␛b"},
		{"bel and nul", "a\x07\x00b", "a␇␀b", "a␇␀b"},
		{"del", "a\x7fb", "a␡b", "a␡b"},
		{"c1 csi rune", "a\u009b2Jb", "a\uFFFD2Jb", "a\uFFFD2Jb"},
		{"c1 osc rune", "a\u009d0;t\u009cb", "a\uFFFD0;t\uFFFDb", "a\uFFFD0;t\uFFFDb"},
		{"raw 8-bit csi byte", "a\x9b2Jb", "a\uFFFD2Jb", "a\uFFFD2Jb"},
		{"invalid utf8", "a\xff\xfeb", "a\uFFFD\uFFFDb", "a\uFFFD\uFFFDb"},
		{"bidi override", "user\u202Egnp.exe", "user\uFFFDgnp.exe", "user\uFFFDgnp.exe"},
		{"bidi isolates", "\u2066a\u2069\u2067b\u2068", "\uFFFDa\uFFFD\uFFFDb\uFFFD", "\uFFFDa\uFFFD\uFFFDb\uFFFD"},
		{"implicit marks stay", "a\u200Eb\u200Fc", "a\u200Eb\u200Fc", "a\u200Eb\u200Fc"},
		{"line separator", "a\u2028b", "a b", "a\nb"},
		{"can cancels osc", "a\x1b]0;t\x18b", "a␛␘b", "a␛␘b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Line(c.in); got != c.line {
				t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
			}
			if got := Block(c.in); got != c.block {
				t.Errorf("Block(%q) = %q, want %q", c.in, got, c.block)
			}
		})
	}
}

func TestPrintableASCIIIsNotCopied(t *testing.T) {
	s := "SELECT * FROM t WHERE a = 'b'"
	if got := Line(s); got != s {
		t.Fatalf("Line changed printable ASCII: %q", got)
	}
	allocs := testing.AllocsPerRun(100, func() { _ = Line(s) })
	if allocs != 0 {
		t.Fatalf("Line allocated %v times on printable ASCII", allocs)
	}
}

// checkSafe is the property every output of Line/Block has; the fuzz target
// and the TUI tests use it.
func checkSafe(t *testing.T, in, out string, block bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 out of %q: %q", in, out)
	}
	for _, r := range out {
		switch {
		case r == '\n' || r == '\t':
			if !block {
				t.Fatalf("Line(%q) kept %q: %q", in, r, out)
			}
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			t.Fatalf("control %U survived in %q (from %q)", r, out, in)
		case isBidiControl(r) || r == 0x2028 || r == 0x2029:
			t.Fatalf("bidi/separator %U survived in %q (from %q)", r, out, in)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"", "SELECT 1", "a\nb\tc\r\n", "\x1b]52;c;aGVsbG8=\x07", "\x1b]0;t\x1b\\",
		"\x1b[2J\x1b[H", "\x1bPq\x1b\\", "\x1b_G\x1b\\", "\x9b31m", "\u009b31m",
		"\u202Eabc", "\u2066x\u2069", "\xff\xfe", "\x1b", "\x1b]", "\x1b[", "日本\x1b[1m語",
		"\x1b]0;\xe1\xba\x9cX", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, block := Line(s), Block(s)
		checkSafe(t, s, line, false)
		checkSafe(t, s, block, true)
		if strings.Contains(line, "\n") {
			t.Fatalf("Line kept a newline: %q", line)
		}
		if Line(line) != line || Block(block) != block {
			t.Fatalf("not idempotent on %q: %q / %q", s, line, block)
		}
	})
}
