package tui

import (
	tea "github.com/charmbracelet/bubbletea"
)

// lineInput is the filter prompt: append, backspace, ctrl+u. A few lines
// instead of bubbles/textinput, which would pull a system-clipboard
// module into the build for nothing.
type lineInput struct {
	value []rune
}

const filterLimit = 200

func (l *lineInput) Value() string { return string(l.value) }

func (l *lineInput) SetValue(s string) { l.value = []rune(s) }

// update applies one key; it reports whether the value changed.
func (l *lineInput) update(msg tea.KeyMsg) bool {
	switch msg.Type {
	case tea.KeyRunes, tea.KeySpace:
		if len(l.value)+len(msg.Runes) > filterLimit {
			return false
		}
		l.value = append(l.value, msg.Runes...)
		return true
	case tea.KeyBackspace:
		if len(l.value) > 0 {
			l.value = l.value[:len(l.value)-1]
			return true
		}
	case tea.KeyCtrlU:
		l.value = l.value[:0]
		return true
	}
	return false
}
