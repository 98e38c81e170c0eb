package tui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// overlayConfirm draws the confirmation box over the body, replacing
// whole lines so no escape sequence is cut in half. It never covers the
// selected row: the box goes in the larger space above or below it, and
// when that space is short the effect's lines give way first (the head,
// which names the target, and the keys always show).
func (m *Model) overlayConfirm(body []string) []string {
	st := &m.ctx.styles
	w := min(72, m.ctx.width-4)
	inner := w - 4 // border and padding
	head, effect := m.prompt(m.confirm, inner)
	var text []string
	for _, h := range head {
		text = append(text, wrapWords(h, inner)...)
	}
	rest := wrapWords(effect, inner)
	if effect == "" {
		rest = nil
	}
	hint := wrapWords(m.confirmHint(), inner)

	top, room := 0, len(body)
	if at := m.selectedBodyLine(); at >= 0 && at < len(body) {
		above, below := at, len(body)-at-1
		if below >= above {
			top, room = at+1, below
		} else {
			room = above
		}
	}
	for len(rest) > 0 && 2+len(text)+len(rest)+1+len(hint) > room {
		rest = rest[:len(rest)-1]
	}
	gap := "\n\n"
	if 2+len(text)+1+len(hint) > room {
		hint, gap = wrapWords(m.confirmHintShort(), inner), "\n"
	}
	content := strings.Join(append(text, rest...), "\n") + gap + st.Dim.Render(strings.Join(hint, "\n"))
	box := strings.Split(st.Dialog.Width(w-2).Render(content), "\n")
	if len(box) < room {
		top += (room - len(box)) / 2
	}
	out := append([]string(nil), body...)
	for i, l := range box {
		if at := top + i; at < len(out) && at < top+max(room, 1) {
			out[at] = lipgloss.PlaceHorizontal(m.ctx.width, lipgloss.Center, l)
		}
	}
	return out
}

// selectedBodyLine is the body line of the selected row in the
// Operations table (the column header is line 0), -1 when no row is
// drawn selected (the detail view: its first lines name the operation,
// so the box goes below them).
func (m *Model) selectedBodyLine() int {
	if m.view != viewOps {
		return -1
	}
	if m.detailOpen {
		return 1
	}
	o := m.ops
	if o.cursorRow < 0 {
		return -1
	}
	return 1 + o.cursorRow - o.offset
}

func (m *Model) confirmHint() string {
	if m.confirm.kind == actCancel && m.confirm.set == nil {
		return "y cancels; c cancels and closes; n, esc or enter answer No"
	}
	return "y confirms; n, esc or enter answer No"
}

// confirmHintShort is the hint where the long one does not fit.
func (m *Model) confirmHintShort() string {
	if m.confirm.kind == actCancel && m.confirm.set == nil {
		return "y cancel, c cancel+close, other keys No"
	}
	return "y yes, other keys No"
}
