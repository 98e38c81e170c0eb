package tui

import (
	"context"
	"errors"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// Run runs the TUI on e in the alternate screen until the operator quits
// (q) or ctx is done. NO_COLOR in the environment has the effect of
// --no-color.
func Run(ctx context.Context, e Engine, o Options, in io.Reader, out io.Writer) error {
	if os.Getenv("NO_COLOR") != "" {
		o.NoColor = true
	}
	if o.Renderer == nil {
		o.Renderer = lipgloss.NewRenderer(out)
		// Ask the terminal for its colour profile and background now,
		// before Bubble Tea owns the input: asked later, from inside the
		// first View, the answer goes to the program's key reader and
		// the query waits for its timeout (seconds of blank screen).
		o.Renderer.ColorProfile()
		o.Renderer.HasDarkBackground()
	}
	if o.Clipboard == nil {
		o.Clipboard = out
	}
	m := newModel(e, o)
	done := make(chan struct{})
	m.done = done
	defer close(done)
	// Signals are the caller's: it cancels ctx on SIGINT/SIGTERM. Bubble
	// Tea's own handler would race that cancellation and can block forever
	// sending to the stopped event loop (v1.3.10).
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen(), tea.WithoutSignalHandler()}
	if o.Mouse {
		popts = append(popts, tea.WithMouseCellMotion())
	}
	p := tea.NewProgram(m, popts...)
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // ctx done is a normal way to stop
	}
	return err
}
