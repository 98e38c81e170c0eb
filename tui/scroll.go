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
