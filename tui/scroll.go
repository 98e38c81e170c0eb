package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/keymap"
)

// scrollBy is the pager of the scrolling views (detail, help): it moves
// pos by a line, a page, or to the top or bottom for those keys, and
// clamps it to [0, last]; other keys leave it where it is.
func scrollBy(km tea.KeyMsg, k *keymap.KeyMap, pos, page, last int) int {
	switch {
	case key.Matches(km, k.Up):
		pos--
	case key.Matches(km, k.Down):
		pos++
	case key.Matches(km, k.PageUp):
		pos -= page
	case key.Matches(km, k.PageDown):
		pos += page
	case key.Matches(km, k.Top):
		pos = 0
	case key.Matches(km, k.Bottom):
		pos = last
	}
	return max(0, min(pos, last))
}

// pager is a body of lines that scrolls (the detail and Help views): it
// owns the scroll position and the scrolling keys; content builds the
// lines, which may change between frames, so the position is clamped
// when drawn without being stored.
type pager struct {
	ctx           *programContext
	width, height int
	scroll        int
	content       func() []string
}

func (p *pager) SetSize(w, h int) { p.width, p.height = w, h }

func (p *pager) FullHelp() [][]key.Binding {
	k := &p.ctx.keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back}}
}

func (p *pager) Update(msg tea.Msg) tea.Cmd {
	if km, ok := msg.(tea.KeyMsg); ok {
		p.scroll = scrollBy(km, &p.ctx.keys, p.scroll, p.height, max(0, len(p.content())-p.height))
	}
	return nil
}

// window is the lines from the scroll position on, and how many lines
// below the screen it leaves out.
func (p *pager) window() ([]string, int) {
	l := p.content()
	s := max(0, min(p.scroll, len(l)-p.height))
	return l[s:], max(0, len(l)-s-p.height)
}
