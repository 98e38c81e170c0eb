package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/keymap"
)

// pager is the scrolling of the views that show more lines than fit
// (detail, help): a position and the page height, the keys that move it,
// and the window to draw. The content may shrink between frames, so the
// position is clamped where it is used, never trusted.
type pager struct {
	scroll, height int
}

// pagerHelp lists the keys update handles, for a view's full help.
func pagerHelp(k *keymap.KeyMap) [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back}}
}

// update moves the position for a pager key over total lines.
func (p *pager) update(msg tea.Msg, k *keymap.KeyMap, total int) {
	if km, ok := msg.(tea.KeyMsg); ok {
		p.scroll = scrollBy(km, k, p.scroll, p.height, max(0, total-p.height))
	}
}

// start is the first line to draw of total, without storing the clamp
// (View never changes state).
func (p pager) start(total int) int { return max(0, min(p.scroll, total-p.height)) }

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

// listCursor is the selection of a list view whose rows are one line
// each (Clients, Warehouses): the selected row and the first row drawn.
// clamp keeps the selection on a listed row and that row on screen.
type listCursor struct {
	cursor, offset int
}

// move applies a movement key over n rows of which page fit on screen;
// it reports whether km was one.
func (c *listCursor) move(km tea.KeyMsg, k *keymap.KeyMap, n, page int) bool {
	switch {
	case key.Matches(km, k.Down):
		c.cursor++
	case key.Matches(km, k.Up):
		c.cursor--
	case key.Matches(km, k.PageDown):
		c.cursor += page
	case key.Matches(km, k.PageUp):
		c.cursor -= page
	case key.Matches(km, k.Top):
		c.cursor = 0
	case key.Matches(km, k.Bottom):
		c.cursor = n - 1
	default:
		return false
	}
	c.clamp(n, page)
	return true
}

func (c *listCursor) clamp(n, page int) {
	c.cursor = max(0, min(c.cursor, n-1))
	if c.cursor < c.offset {
		c.offset = c.cursor
	}
	if c.cursor >= c.offset+page {
		c.offset = c.cursor - page + 1
	}
	c.offset = max(0, min(c.offset, n-page))
}
