package tui

import (
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/keymap"
	"github.com/dbxtop/dbxtop/model"
)

// component is one view of the TUI, in the shape of soft-serve's
// pkg/ui/common.Component: it owns its state (cursor, scroll, filter),
// handles its own keys, says which keys work (help.KeyMap, for the footer
// and the Help view) and is told its size. The root model only routes
// messages to the current component and draws the frame around its body.
// View never changes state: everything it shows was settled in Update or
// SetSize.
type component interface {
	// Update handles a message (keys are only sent to the current view).
	Update(msg tea.Msg) tea.Cmd
	// View is the body: at most the SetSize height in lines.
	View() string
	help.KeyMap
	SetSize(width, height int)
}

// capturer is a component that is reading text (a filter prompt): the root
// then hands it every key but ctrl+c, so nothing typed there can run a
// command.
type capturer interface{ Capturing() bool }

// programContext is shared by every component: size, styles, glyphs, keys
// and options, built once, and the data every view reads (the snapshot,
// the poller's health, the event ring, action progress). Only the root
// model writes the data; components read it.
type programContext struct {
	width, height int
	styles        Styles
	glyphs        Glyphs
	keys          keymap.KeyMap
	opts          Options
	readOnly      bool

	// started is when the program started: the start-up screen says how
	// long it has waited.
	started time.Time
	snap    model.Snapshot
	health  model.Health
	loaded  bool
	ring    *ring
	busy    map[string]string       // statement id → "closing…" while an action runs
	results map[string]actionResult // statement id → last action result, shown in the row for a while

	// screenEvery is how often the screen takes a snapshot once + or -
	// changed it (0: opts.Refresh).
	screenEvery time.Duration

	status     string
	statusCrit bool
	statusAt   time.Time // when status was set: it expires after statusTTL
	// seq orders what the status line may say: the last action's status
	// (statusSeq) or the selected operation going missing (opsModel's
	// missingSeq); the newer one shows.
	seq, statusSeq int
	// frozen: a source is down (serve, the proxy, the workspace's
	// listing); set with each snapshot.
	frozen *frozenState
}

// screenRefresh is how often the screen takes a snapshot.
func (c *programContext) screenRefresh() time.Duration {
	if c.screenEvery > 0 {
		return c.screenEvery
	}
	return c.opts.Refresh
}

// statusTTL is how long a status message stays: long enough to read,
// short enough that a failed cancel is not still on screen minutes later
// (the Events view keeps every action's outcome).
const statusTTL = 8 * time.Second

// statusLive says whether the status message is still shown.
func (c *programContext) statusLive() bool {
	return c.status != "" && c.opts.Now().Sub(c.statusAt) < statusTTL
}

func (c *programContext) setStatus(s string, crit bool) {
	c.status, c.statusCrit, c.statusAt = s, crit, c.opts.Now()
	c.seq++
	c.statusSeq = c.seq
}

// workspace is what is watched: the snapshot's once the engine has said
// (its Host is set), else the one the program was started for (several
// workspaces: the merged snapshot has no single host) with the
// snapshot's warehouse listing.
func (c *programContext) workspace() model.Workspace {
	if c.snap.Workspace.Host != "" {
		return c.snap.Workspace
	}
	ws := c.opts.Workspace
	ws.Listing = c.snap.Workspace.Listing
	return ws
}

// filterBox is the `/` prompt every list view shares: typing applies at
// once, enter keeps the text, esc clears it. While active it captures
// every key.
type filterBox struct {
	input  lineInput
	active bool
	text   string // lower-cased, trimmed: what rows are matched against
}

// key handles one key while the prompt is open; it reports whether the
// filter text changed.
func (f *filterBox) key(msg tea.KeyMsg) (changed bool) {
	switch msg.Type {
	case tea.KeyEsc:
		f.active = false
		changed = f.text != ""
		f.set("")
		return changed
	case tea.KeyEnter:
		f.active = false
		return false
	}
	if f.input.update(msg) {
		f.text = strings.ToLower(strings.TrimSpace(f.input.Value()))
		return true
	}
	return false
}

func (f *filterBox) open() { f.active = true; f.input.SetValue(f.text) }

func (f *filterBox) set(s string) {
	f.input.SetValue(s)
	f.text = strings.ToLower(strings.TrimSpace(s))
}

// prompt is the status line while the prompt is open.
func (f *filterBox) prompt(st *Styles, what string) string {
	return st.Bold.Render("/"+f.input.Value()+"_") + st.Dim.Render("  filter: "+what+" (enter keeps, esc clears)")
}

// lines joins body lines for a component's View.
func lines(ls []string) string { return strings.Join(ls, "\n") }
