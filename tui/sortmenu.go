package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
)

// sortMenu is the Operations table's `s`: model's sort keys on the status
// line, the current one marked; a digit or enter picks, esc leaves the
// order as it was. While open it takes every key.
type sortMenu struct {
	open   bool
	cursor int // index into model.SortKeys
}

// openSortMenu opens the menu on the current sort key.
func (m *opsModel) openSortMenu() {
	m.menu.open, m.menu.cursor = true, 0
	if i := slices.Index(model.SortKeys, m.sort); i >= 0 {
		m.menu.cursor = i
	}
}

// menuKey handles a key while the menu is open.
func (m *opsModel) menuKey(km tea.KeyMsg) {
	k := &m.ctx.keys
	n := len(model.SortKeys)
	switch {
	case km.Type == tea.KeyEsc || key.Matches(km, k.Sort):
		m.menu.open = false
	case km.Type == tea.KeyEnter:
		m.menu.open = false
		m.setSort(model.SortKeys[m.menu.cursor])
	case key.Matches(km, k.Down) || km.Type == tea.KeyRight || km.Type == tea.KeyTab:
		m.menu.cursor = (m.menu.cursor + 1) % n
	case key.Matches(km, k.Up) || km.Type == tea.KeyLeft || km.Type == tea.KeyShiftTab:
		m.menu.cursor = (m.menu.cursor + n - 1) % n
	case km.Type == tea.KeyRunes && len(km.Runes) == 1 && km.Runes[0] >= '1' && int(km.Runes[0]-'0') <= n:
		m.menu.open = false
		m.setSort(model.SortKeys[km.Runes[0]-'1'])
	}
}

// setSort orders the table by one of model's sort keys (the direction
// stays; S reverses it).
func (m *opsModel) setSort(k model.SortKey) {
	m.sort = k
	m.resort()
}

// menuLine is the status line while the menu is open: every key with its
// digit, the current one in brackets; shortened to fit the width.
func (m *opsModel) menuLine(st *Styles, w int) string {
	var parts []string
	for i, k := range model.SortKeys {
		p := fmt.Sprintf("%d %s", i+1, k)
		if i == m.menu.cursor {
			p = st.Bold.Render("[" + p + "]")
		}
		parts = append(parts, p)
	}
	line := "sort by: " + strings.Join(parts, " ") + st.Dim.Render("  enter picks, esc keeps")
	if ansi.StringWidth(line) > w {
		line = "sort: " + strings.Join(parts, " ")
	}
	return line
}
