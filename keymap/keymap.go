// Package keymap holds every key binding of the dbxtop TUI and its help
// text, in one place, so the footer, the Help view and the docs agree.
//
// It imports nothing from dbxtop.
package keymap

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every binding of the TUI. Mutating actions (Adopt, Close,
// Cancel) are disabled in read-only mode: a disabled binding never matches
// and is hidden from help.
type KeyMap struct {
	// Navigation.
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding

	// Views.
	NextView key.Binding
	PrevView key.Binding
	Help     key.Binding
	Detail   key.Binding // enter: operation detail, or expand an endpoint
	// DrillDown is enter in the Clients view: that client's operations.
	DrillDown key.Binding
	// DrillWarehouse is enter in the Warehouses view.
	DrillWarehouse key.Binding
	// Expand is enter in the Events view: the top event whole.
	Expand key.Binding
	// Faster and Slower change the refresh (the engine's, or the screen's when attached).
	Faster  key.Binding
	Slower  key.Binding
	Back    key.Binding // esc: leave detail/help, clear the filter
	Quit    key.Binding
	Suspend key.Binding // ctrl+z: back to the shell; fg resumes
	LastErr key.Binding // !: the last error in full (Events view)

	// Operations table.
	Sort        key.Binding
	SortReverse key.Binding
	Filter      key.Binding
	Flagged     key.Binding
	Finished    key.Binding // show the finished-and-closed rows
	Pause       key.Binding

	// Row actions.
	Adopt  key.Binding
	Close  key.Binding
	Cancel key.Binding
	// CloseSet and CancelSet act on every matching operation the filter
	// lists: re-close the UNCLOSED ones, cancel the INACTIVE ones.
	CloseSet  key.Binding
	CancelSet key.Binding
	CopyID    key.Binding
	CopySQL   key.Binding
	Export    key.Binding
	// Workspace cycles the Operations view between every workspace and
	// each one (when several are watched).
	Workspace key.Binding

	// Confirmation dialog: only Confirm runs the action; anything else,
	// enter included, answers No.
	Confirm key.Binding

	// The `/` prompt reads every key as text but these (the footer lists
	// them while it is open).
	PromptKeep  key.Binding // enter: close the prompt, keep the filter
	PromptClear key.Binding // esc: close the prompt, clear the filter
	PromptQuit  key.Binding // ctrl+c: the only way out while typing

	readOnly bool
}

// DefaultKeyMap returns the bindings documented in docs/operator-guide.md.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("k/up", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("j/down", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "bottom")),

		NextView:       key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevView:       key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
		Help:           key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Detail:         key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail/expand")),
		DrillDown:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "Clients: the client's operations")),
		Expand:         key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "Events: the top event in full")),
		DrillWarehouse: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "Warehouses: the warehouse's operations")),
		Faster:         key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "refresh more often")),
		Slower:         key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "refresh less often")),
		Back:           key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back/clear filter")),
		Quit:           key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q/ctrl+c", "quit")),

		PromptKeep:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
		PromptClear: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		PromptQuit:  key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		LastErr:     key.NewBinding(key.WithKeys("!"), key.WithHelp("!", "last error in full")),
		Suspend:     key.NewBinding(key.WithKeys("ctrl+z"), key.WithHelp("ctrl+z", "suspend (fg resumes)")),

		Sort:        key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort menu")),
		SortReverse: key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse sort")),
		Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Flagged:     key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "flagged only")),
		Finished:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "show finished")),
		Pause:       key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "pause order")),

		Adopt:     key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "adopt (close when done)")),
		Close:     key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "re-close")),
		Cancel:    key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "cancel statement")),
		CloseSet:  key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "re-close every UNCLOSED listed (filter)")),
		CancelSet: key.NewBinding(key.WithKeys("X"), key.WithHelp("X", "cancel every INACTIVE listed (filter)")),
		CopyID:    key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy id")),
		CopySQL:   key.NewBinding(key.WithKeys("Y"), key.WithHelp("Y", "copy SQL")),
		Export:    key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "export")),
		Workspace: key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "workspace: all / one")),

		Confirm: key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "confirm")),
	}
}

// SetReadOnly disables (or re-enables) every mutating binding. Disabled
// bindings never match a key and vanish from ShortHelp/FullHelp.
func (k *KeyMap) SetReadOnly(ro bool) {
	k.readOnly = ro
	k.Adopt.SetEnabled(!ro)
	k.Close.SetEnabled(!ro)
	k.Cancel.SetEnabled(!ro)
	k.CloseSet.SetEnabled(!ro)
	k.CancelSet.SetEnabled(!ro)
}

// ReadOnly reports whether SetReadOnly(true) is in effect.
func (k KeyMap) ReadOnly() bool { return k.readOnly }

// ShortHelp is the footer line: the keys an operator needs first.
func (k KeyMap) ShortHelp() []key.Binding {
	return enabled([]key.Binding{k.NextView, k.Detail, k.Filter, k.Flagged, k.Cancel, k.Close, k.Help, k.Quit})
}

// FullHelp is the Help view, grouped by purpose.
func (k KeyMap) FullHelp() [][]key.Binding {
	groups := [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.NextView, k.PrevView, k.Detail, k.Back, k.Help, k.LastErr, k.Faster, k.Slower, k.Suspend, k.Quit},
		{k.Sort, k.SortReverse, k.Filter, k.Flagged, k.Finished, k.Pause},
		{k.Adopt, k.Close, k.Cancel, k.CloseSet, k.CancelSet, k.CopyID, k.CopySQL, k.Export},
		{k.DrillDown, k.DrillWarehouse, k.Expand},
	}
	out := groups[:0]
	for _, g := range groups {
		if g = enabled(g); len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// enabled drops disabled bindings so help never advertises a key that
// does nothing.
func enabled(bs []key.Binding) []key.Binding {
	out := make([]key.Binding, 0, len(bs))
	for _, b := range bs {
		if b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}
