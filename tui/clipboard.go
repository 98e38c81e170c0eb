package tui

import (
	"fmt"
	"io"
	"os"

	"github.com/aymanbagabas/go-osc52/v2"
	tea "github.com/charmbracelet/bubbletea"
)

// copyDoneMsg reports a clipboard copy.
type copyDoneMsg struct {
	what string
	n    int
	err  error
}

// copy sends text to the terminal's clipboard with OSC 52, which reaches
// the operator's own clipboard through ssh and tmux (clipboard tools on a
// headless bastion do not). The sequence goes out in one Write so it is
// not interleaved with a frame.
func (m *Model) copy(what, text string) tea.Cmd {
	w := m.ctx.opts.Clipboard
	if w == nil {
		m.setStatus("copy: no terminal to send the clipboard sequence to", true)
		return nil
	}
	return func() tea.Msg {
		seq := osc52.New(text)
		if os.Getenv("TMUX") != "" {
			seq = seq.Tmux()
		}
		_, err := io.WriteString(w, seq.String())
		return copyDoneMsg{what: what, n: len(text), err: err}
	}
}

func (m *Model) copyDone(msg copyDoneMsg) {
	if msg.err != nil {
		m.setStatus(fmt.Sprintf("copy %s: writing the OSC 52 sequence failed: %v", msg.what, msg.err), true)
		return
	}
	m.setStatus(fmt.Sprintf("copied %s (%d bytes) to the clipboard with OSC 52", msg.what, msg.n), false)
}
