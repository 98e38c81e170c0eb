package tui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// overlayConfirm draws the confirmation box over the middle of the body,
// replacing whole lines so no escape sequence is cut in half.
func (m *Model) overlayConfirm(body []string) []string {
	st := &m.ctx.styles
	w := min(72, m.ctx.width-4)
	text := ansi.Wrap(m.confirm.prompt, w-4, " ")
	box := st.Dialog.Width(w - 2).Render(text + "\n\n" + st.Dim.Render(m.confirmHint()))
	lines := strings.Split(box, "\n")
	top := max(0, (len(body)-len(lines))/2)
	out := append([]string(nil), body...)
	for i, l := range lines {
		if top+i < len(out) {
			out[top+i] = lipgloss.PlaceHorizontal(m.ctx.width, lipgloss.Center, l)
		}
	}
	return out
}

func (m *Model) confirmHint() string {
	if m.confirm.kind == actCancel {
		return "y cancels; c cancels and closes; n, esc or enter answer No"
	}
	return "y confirms; n, esc or enter answer No"
}
