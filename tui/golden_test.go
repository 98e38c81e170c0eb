package tui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/dbxtop/dbxtop/model"
)

// goldenViews are the screens under golden test: keys to reach each one
// from the start, and text that shows it has settled (all fixture events
// consumed where the view shows them).
// Keys are processed in order before teatest's Quit, so only what
// arrives asynchronously needs waiting for: the first snapshot (always)
// and the engine events where the view shows them (wait, at 120×40 only
// when the small screen cannot show them).
var goldenViews = []struct {
	name      string
	keys      []string
	waitLarge []string
}{
	{"operations", nil, nil},
	{"detail", []string{"enter"}, []string{"close attempt 3 failed"}},
	{"endpoints", []string{"tab"}, nil},
	{"endpoints-expanded", []string{"tab", "enter"}, nil},
	{"events", []string{"tab", "tab"}, []string{"11:59:50"}},
	{"help", []string{"?"}, nil},
	{"warehouses", []string{"tab", "tab", "tab", "tab"}, nil},
	{"confirm", []string{"j", "x"}, nil},
	{"filtered", []string{"/", "w", "h", "-", "2", "enter"}, nil},
	{"hostile", nil, nil}, // hostileSnapshot: server text full of escape sequences
	{"hostile-detail", []string{"enter"}, nil},
}

var goldenVariants = []struct {
	name string
	set  func(*Options)
}{
	{"color", func(o *Options) {}},
	{"nocolor", func(o *Options) { o.NoColor = true }},
	{"ascii", func(o *Options) { o.ASCII = true; o.Renderer = testRenderer(termenv.Ascii) }},
	{"readonly", func(o *Options) { o.ReadOnly = true; o.ASCII = true; o.Renderer = testRenderer(termenv.Ascii) }},
}

// TestGolden runs the real program (teatest) for every view at 80×24,
// 120×40 and 200×50 in colour, --no-color, --ascii and --read-only (and at
// 80×23 and 60×20 in --no-color), and compares the
// final screen with testdata/TestGolden/... (refresh with -update).
func TestGolden(t *testing.T) {
	for _, v := range goldenViews {
		for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 50}, {80, 23}, {60, 20}} {
			for _, vr := range goldenVariants {
				if vr.name == "readonly" && v.name != "operations" && v.name != "help" && v.name != "confirm" {
					continue
				}
				if sz[1] < 24 && vr.name != "nocolor" {
					continue // the small sizes (an 80×24 tmux pane, the minimum) in one variant
				}
				t.Run(fmt.Sprintf("%s/%dx%d/%s", v.name, sz[0], sz[1], vr.name), func(t *testing.T) {
					o := testOptions()
					o.Refresh = 200 * time.Millisecond // short, so no timer outlives the test
					vr.set(&o)
					var wait []string
					if v.name == "events" || sz[0] >= 120 {
						wait = v.waitLarge
					}
					snap, evs := fixtureSnapshot(), fixtureEvents()
					if strings.HasPrefix(v.name, "hostile") {
						// No events: their arrival races the keys, and the
						// Events view is covered by TestHostileTextEveryView.
						snap, evs = hostileSnapshot(), nil
					}
					screen := runGoldenOn(t, snap, evs, o, sz[0], sz[1], v.keys, wait)
					checkFrame(t, screen, vr.name != "color")
					if vr.name == "ascii" || vr.name == "readonly" {
						for i, r := range screen {
							if r > 127 {
								t.Fatalf("non-ASCII %q at byte %d in --ascii screen", r, i)
							}
						}
					}
					if vr.name == "nocolor" || vr.name == "ascii" || vr.name == "readonly" {
						if bytes.Contains([]byte(screen), []byte("\x1b[")) {
							t.Fatal("escape sequence in a monochrome screen")
						}
					}
					golden.RequireEqual(t, []byte(screen))
				})
			}
		}
	}
}

func TestGoldenTooSmall(t *testing.T) {
	o := testOptions()
	o.Refresh = 200 * time.Millisecond
	golden.RequireEqual(t, []byte(runGolden(t, o, 59, 20, nil, []string{"terminal too small"})))
}

// runGolden drives the program through teatest and returns the final
// model's screen.
func runGolden(t *testing.T, o Options, w, h int, keys, wait []string) string {
	t.Helper()
	return runGoldenOn(t, fixtureSnapshot(), fixtureEvents(), o, w, h, keys, wait)
}

func runGoldenOn(t *testing.T, snap model.Snapshot, evs []model.Event, o Options, w, h int, keys, wait []string) string {
	t.Helper()
	e := newFakeEngine(snap)
	for _, ev := range evs {
		e.events <- ev
	}
	t.Cleanup(e.closeEvents)
	tm := teatest.NewTestModel(t, New(e, o), teatest.WithInitialTermSize(w, h))
	out := &screenLog{tm: tm}
	// The first snapshot is applied once its flags show in the header.
	if w >= minWidth && h >= minHeight {
		out.wait(t, "CLOSE_FAILED", shortKind[model.FlagCloseFailed])
	}
	for _, k := range keys {
		tm.Send(keyOf(k))
	}
	for _, s := range wait {
		out.wait(t, s)
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	m := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	return m.View()
}

// screenLog accumulates the program's output across waits: each
// teatest.WaitFor consumes what it reads.
type screenLog struct {
	tm   *teatest.TestModel
	seen []byte
}

// wait waits (bounded) until the program has printed s or one of alt.
func (l *screenLog) wait(t *testing.T, s string, alt ...string) {
	t.Helper()
	var cur []byte
	teatest.WaitFor(t, l.tm.Output(), func(b []byte) bool {
		cur = b
		for _, s := range append(alt, s) {
			if bytes.Contains(l.seen, []byte(s)) || bytes.Contains(b, []byte(s)) {
				return true
			}
		}
		return false
	}, teatest.WithDuration(3*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	l.seen = append(l.seen, cur...)
}

var _ tea.Model = (*Model)(nil)
