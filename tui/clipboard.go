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
// `set -g set-clipboard on` tmux takes it into a paste buffer and forwards
// it to the outer terminal. The DCS pass-through wrapper would need
// `allow-passthrough`, which is off by default, so it is not used. When
// tmux would drop the sequence (set-clipboard external, its default, or
// off), the status line says so and how to enable it instead of claiming
// a copy. The sequence goes out
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
			if err := tmuxDrops(tmuxOption("set-clipboard")); err != nil {
				return copyDoneMsg{what: what, err: err}
			}
			note = "tmux"
		}
		_, err := io.WriteString(w, osc52.New(text).String())
		return copyDoneMsg{what: what, n: len(text), note: note, err: err}
	}
}

// tmuxDrops says why tmux will not pass a program's OSC 52 on, from its
// set-clipboard value: only "on" lets programs set the clipboard;
// "external" (tmux's default) sets it from tmux's own copy mode alone and
// ignores programs, "off" ignores both. nil when the copy can arrive, or
// when tmux could not be asked (""): then the status line says it was
// sent, not that it was copied.
func tmuxDrops(v string) error {
	switch v {
	case "on", "":
		return nil
	}
	return fmt.Errorf("tmux drops it (set-clipboard %s); enable: set -g set-clipboard on", v)
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
		m.ctx.setStatus(fmt.Sprintf("copy %s: %v", msg.what, msg.err), true)
		return
	}
	m.ctx.setStatus(fmt.Sprintf("copy %s: sent %d bytes to the %s with OSC 52", msg.what, msg.n, msg.note), false)
}
