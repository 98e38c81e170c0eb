package tui

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/aymanbagabas/go-osc52/v2"
	tea "github.com/charmbracelet/bubbletea"
)

// copyDoneMsg reports a clipboard copy.
type copyDoneMsg struct {
	what string
	n    int
	note string // how it was sent
	err  error
}

// copy sends text to the terminal's clipboard with OSC 52, which reaches
// the operator's own clipboard through ssh (clipboard tools on a headless
// bastion do not). Inside tmux the sequence is sent plain: with
// `set -g set-clipboard on` (or external) tmux takes it into a paste
// buffer and forwards it to the outer terminal. The DCS pass-through
// wrapper would need `allow-passthrough`, which is off by default, so it
// is not used. When tmux would drop the sequence (set-clipboard off), the
// status line says so instead of claiming a copy. The sequence goes out
// in one Write so it is not interleaved with a frame.
func (m *Model) copy(what, text string) tea.Cmd {
	w := m.ctx.opts.Clipboard
	if w == nil {
		m.ctx.setStatus("copy: no terminal to send the clipboard sequence to", true)
		return nil
	}
	return func() tea.Msg {
		note := "terminal"
		if os.Getenv("TMUX") != "" {
			switch v := tmuxOption("set-clipboard"); v {
			case "off":
				return copyDoneMsg{what: what, err: fmt.Errorf("tmux has set-clipboard off and would drop it (set -g set-clipboard on)")}
			case "":
				note = "tmux"
			default:
				note = "tmux (set-clipboard " + v + ")"
			}
		}
		_, err := io.WriteString(w, osc52.New(text).String())
		return copyDoneMsg{what: what, n: len(text), note: note, err: err}
	}
}

// tmuxOption reads a global tmux option; "" when tmux cannot be asked.
func tmuxOption(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tmux", "show-options", "-gv", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func (m *Model) copyDone(msg copyDoneMsg) {
	if msg.err != nil {
		m.ctx.setStatus(fmt.Sprintf("copy %s: not copied: %v", msg.what, msg.err), true)
		return
	}
	m.ctx.setStatus(fmt.Sprintf("copy %s: sent %d bytes to the %s with OSC 52", msg.what, msg.n, msg.note), false)
}
