// Package tui is dbxtop's Bubble Tea program: the Operations, Endpoints,
// Events and Help views, the operation detail, and the row actions that
// go through the follow engine.
//
// It imports model, sources, keymap, report and textfmt from
// dbxtop, never config, serve or cmd: cmd gives it an engine and its
// options.
package tui

import (
	"context"
	"io"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/dbxtop/dbxtop/model"
)

// Engine is what the TUI needs from the follow engine (*poller.Engine
// implements it). Keeping it this small lets tests drive the views with a
// fake and keeps the TUI from reaching into the poller.
type Engine interface {
	Snapshot() model.Snapshot
	Events() <-chan model.Event
	Health() model.Health
	ReadOnly() bool
	Adopt(ctx context.Context, id string) error
	Close(ctx context.Context, id string) error
	Cancel(ctx context.Context, id string) error
}

// Colors override the palette ("#rrggbb" or an ANSI number); "" keeps
// the default. Severity is never carried by colour alone.
type Colors struct{ Warning, Critical, OK, Accent, Dim string }

// Options configure the TUI. The zero value is usable.
type Options struct {
	NoColor  bool // monochrome: severity still reads from symbols and words
	ASCII    bool // no box drawing, no non-ASCII glyphs
	ReadOnly bool // disable mutating keys (the engine refuses as well)
	// Refresh is the UI tick: how often a snapshot is taken. 0 → 1s.
	Refresh time.Duration
	// SourceRefresh, when set, is how often the data itself is refreshed
	// where it is polled (an attached serve's --refresh): the header shows
	// it rather than the UI tick, which only reads serve's latest snapshot.
	SourceRefresh time.Duration
	Workspace     model.Workspace
	// ExportDir is where `e` writes its files. "" → ".".
	ExportDir string
	// Now is the clock used for event times and export names. nil → time.Now.
	Now     func() time.Time
	Version string

	// Renderer decides the colour profile. nil → one detected from the
	// output (Run) or lipgloss's default renderer (New). Tests set an
	// explicit profile so golden files are stable.
	Renderer *lipgloss.Renderer
	// Clipboard receives OSC 52 sequences for `y`/`Y`. nil → the program's
	// output (Run) or nowhere (New).
	Clipboard io.Writer
	// ActionTimeout bounds one adopt/close/cancel call. 0 → 30s.
	ActionTimeout time.Duration
	// InactivityWarn is the engine's --inactivity-warn: a set action
	// skips targets whose client called more recently. 0 → model's
	// default.
	InactivityWarn time.Duration
	// Mouse turns on wheel scrolling and click selection (--mouse). Off by
	// default: mouse reporting takes text selection away from the
	// terminal, which operators over ssh rely on.
	Mouse bool
	// ActionPath names the API actions go through, for the confirmation
	// text: "thrift" (CancelOperation/CloseOperation) or "" for the
	// Statement Execution API.
	ActionPath string
	// From the config file (docs/configuration.md): the view to open on
	// (operations, endpoints, events, clients), the initial sort (a
	// model.SortKey name), the Operations columns to show (config names;
	// nil → all, in the table's own order) and colour overrides.
	View    string
	Sort    string
	Columns []string
	Colors  Colors
}

func (o Options) withDefaults() Options {
	if o.Refresh <= 0 {
		o.Refresh = time.Second
	}
	if o.ExportDir == "" {
		o.ExportDir = "."
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = 30 * time.Second
	}
	if o.Renderer == nil {
		o.Renderer = lipgloss.DefaultRenderer()
	}
	return o
}

// eventRing is how many engine events the Events view keeps.
const eventRing = 1000
