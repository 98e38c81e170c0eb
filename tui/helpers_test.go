package tui

import (
	"os"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// teatest parks one goroutine per test model on a SIGINT channel
		// for the life of the test binary.
		goleak.IgnoreTopFunction("github.com/charmbracelet/x/exp/teatest.NewTestModel.func2"),
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreTopFunction("os/signal.loop"),
	)
	os.Exit(0)
}

// key builds the KeyMsg Bubble Tea delivers for s.
func keyOf(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "space", " ":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// syncModel builds a model, sizes it and applies one snapshot, all on the
// test goroutine: behaviour tests drive Update directly and run the
// commands it returns themselves, so nothing races and nothing sleeps.
func syncModel(t *testing.T, e *fakeEngine, o Options, w, h int) *Model {
	t.Helper()
	m := newModel(e, o)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	refresh(m)
	return m
}

// refresh applies the engine's current snapshot the way a tick does.
func refresh(m *Model) {
	m.Update(m.fetch()())
}

// press sends keys and returns the last command.
func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(keyOf(k))
	}
	return cmd
}

// run executes cmd and feeds its message back, like the program would.
func run(t *testing.T, m *Model, cmd tea.Cmd) tea.Msg {
	t.Helper()
	if cmd == nil {
		t.Fatal("expected a command, got nil")
	}
	msg := cmd()
	m.Update(msg)
	return msg
}

// plain is the screen without escape sequences.
func plain(m *Model) string { return ansi.Strip(m.View()) }
