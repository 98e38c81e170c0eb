package tui

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/dbxtop/dbxtop/model"
)

// Styles are built once per program from one renderer, so the colour
// profile is decided in one place. Severity never reads from colour
// alone: every flag also carries a symbol and a word (see Glyphs).
type Styles struct {
	Title     lipgloss.Style
	Dim       lipgloss.Style
	Bold      lipgloss.Style
	Crit      lipgloss.Style
	Warn      lipgloss.Style
	OK        lipgloss.Style
	Badge     lipgloss.Style // READ-ONLY, PAUSED
	CritBadge lipgloss.Style // EXHAUSTED
	TabActive lipgloss.Style
	TabIdle   lipgloss.Style
	ColHead   lipgloss.Style
	Selected  lipgloss.Style
	Status    lipgloss.Style
	Dialog    lipgloss.Style
	HelpKey   lipgloss.Style
	HelpDesc  lipgloss.Style
}

// Glyphs are the characters that differ between Unicode and --ascii.
type Glyphs struct {
	Crit, Warn  string // flag symbols
	Reaper      string // before the countdown to the server reaper
	Cursor      string // marks the selected row: heavy, since without colour nothing else does
	BarFull     string
	BarEmpty    string
	Ellipsis    string
	HelpSep     string
	Rule        string // horizontal rule under the header
	Border      lipgloss.Border
	Progress    string // "closing…"
	VerticalSep string
	Collapsed   string // before "N finished and closed"
	Cut         string // marks header text dropped for width
}

var unicodeGlyphs = Glyphs{
	Crit: "●", Warn: "▲", Reaper: "→", Cursor: "❯", BarFull: "█", BarEmpty: "░",
	Ellipsis: "…", HelpSep: " • ", Rule: "─", Border: lipgloss.RoundedBorder(),
	Progress: "…", VerticalSep: "│", Collapsed: "+", Cut: "»",
}

var asciiGlyphs = Glyphs{
	Crit: "!!", Warn: "!", Reaper: "R-", Cursor: ">", BarFull: "#", BarEmpty: ".",
	Ellipsis: "~", HelpSep: " | ", Rule: "-",
	Border: lipgloss.Border{
		Top: "-", Bottom: "-", Left: "|", Right: "|",
		TopLeft: "+", TopRight: "+", BottomLeft: "+", BottomRight: "+",
	},
	Progress: "...", VerticalSep: "|", Collapsed: "+", Cut: ">>",
}

// newRenderer decides the colour profile: --no-color (or NO_COLOR, which
// Run folds into NoColor) gives plain text.
func newRenderer(o Options) *lipgloss.Renderer {
	if o.NoColor {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.Ascii)
		r.SetHasDarkBackground(true)
		return r
	}
	return o.Renderer
}

func newStyles(r *lipgloss.Renderer, g Glyphs, c Colors) Styles {
	pick := func(over string, def lipgloss.AdaptiveColor) lipgloss.TerminalColor {
		if over != "" {
			return lipgloss.Color(over)
		}
		return def
	}
	red := pick(c.Critical, lipgloss.AdaptiveColor{Light: "160", Dark: "203"})
	yellow := pick(c.Warning, lipgloss.AdaptiveColor{Light: "130", Dark: "220"})
	green := pick(c.OK, lipgloss.AdaptiveColor{Light: "28", Dark: "78"})
	dim := pick(c.Dim, lipgloss.AdaptiveColor{Light: "244", Dark: "245"})
	accent := pick(c.Accent, lipgloss.AdaptiveColor{Light: "25", Dark: "75"})
	s := r.NewStyle
	return Styles{
		Title:     s().Bold(true).Foreground(accent),
		Dim:       s().Foreground(dim),
		Bold:      s().Bold(true),
		Crit:      s().Bold(true).Foreground(red),
		Warn:      s().Foreground(yellow),
		OK:        s().Foreground(green),
		Badge:     s().Bold(true).Reverse(true),
		CritBadge: s().Bold(true).Reverse(true).Foreground(red),
		TabActive: s().Bold(true).Foreground(accent),
		TabIdle:   s().Foreground(dim),
		ColHead:   s().Bold(true),
		Selected:  s().Reverse(true),
		Status:    s().Foreground(accent),
		Dialog:    s().Border(g.Border).Padding(0, 1).BorderForeground(yellow),
		HelpKey:   s().Bold(true),
		HelpDesc:  s().Foreground(dim),
	}
}

// ForSeverity is the one style of a severity: critical, warning, or plain.
func (s *Styles) ForSeverity(sev model.Severity) lipgloss.Style {
	switch sev {
	case model.SeverityCritical:
		return s.Crit
	case model.SeverityWarning:
		return s.Warn
	}
	return lipgloss.Style{}
}
