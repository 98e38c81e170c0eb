package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/dbxtop/dbxtop/model"
)

// hostilePayloads are what anyone who can run a statement can put into
// SQL text, user and client names, messages and error bodies.
var hostilePayloads = []string{
	"\x1b]52;c;cHduZWQ=\x07",                 // OSC 52: write the clipboard
	"\x1b]0;pwned-title\x07",                 // OSC 0: retitle the terminal
	"\x1b]2;pwned-title\x1b\\",               // OSC 2 with ST
	"\x1b[2J\x1b[H",                          // clear screen, home
	"\x1b[31;1mred",                          // SGR from the server
	"\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\", // tmux pass-through DCS
	"\x1b_Gf=100;AAAA\x1b\\",                 // kitty graphics APC
	"\x1b^pm\x1b\\\x1bXsos\x1b\\",            // PM, SOS
	"\u009b2J\u009d0;t\u009c",                // C1 CSI/OSC/ST as runes
	"\x9b2J",                                 // raw 8-bit CSI byte (invalid UTF-8)
	"a\rb\bc\x00d\x7fe",                      // C0 and DEL
	"line1\nline2\tcol",                      // newline in a one-line field
	"user\u202Egnp.exe\u2066x\u2069",         // bidi override / isolates
	"\x1b]8;;http://evil\x07link\x1b]8;;\x07",
	"\x1b",
}

// hostileSnapshot puts every payload into every server-supplied field,
// through model.NewSnapshot as the engine does.
func hostileSnapshot() model.Snapshot {
	n := fixedNow
	var ops []model.Operation
	for i, p := range hostilePayloads {
		e := &model.ErrorInfo{Kind: model.KindTransport, Call: "GetOperationStatus", Message: "reset " + p, RequestID: "req" + p, ErrorCode: "E" + p}
		ops = append(ops, model.Operation{
			StatementID: fmt.Sprintf("01ef%04x-0000-4000-8000-%012x", i, i), WarehouseID: "wh" + p, User: p + "@x",
			ClientApplication: "app" + p, SQL: "SELECT '" + p + "'\nFROM t", State: model.StateRunning,
			StartedAt: n.Add(-time.Duration(i+1) * time.Minute), ClientActivityKnown: true,
			ClientLastActivity: n.Add(-5 * time.Minute), Open: boolp(true), FirstSeenAt: n.Add(-time.Hour),
			LastPollOKAt: n.Add(-2 * time.Minute), LastError: e, ServerError: "err" + p,
			Close: model.CloseInfo{State: model.CloseFailed, Attempts: 1, LastError: e},
		})
	}
	eps := []model.Endpoint{{Name: "vs" + hostilePayloads[0], Type: "STANDARD" + hostilePayloads[3], State: "ONLINE" + hostilePayloads[8],
		RowLimit: 100, Exhausted: true, LastError: &model.ErrorInfo{Kind: model.KindPermanent, Message: "full" + hostilePayloads[1]},
		Indexes: []model.Index{{Name: "ix" + hostilePayloads[12], Rows: 100, Message: "m" + hostilePayloads[2]}}}}
	return model.NewSnapshot(n, model.Workspace{Host: "h", Warehouses: []string{"wh" + hostilePayloads[5]}}, ops, eps,
		[]model.ErrorInfo{{Kind: model.KindTransport, Message: hostilePayloads[4]}}, model.Thresholds{InactivityWarn: time.Second, ServerIdleTimeout: 10 * time.Minute, LeakAfter: time.Second})
}

func hostileEvents() []model.Event {
	var evs []model.Event
	for i, p := range hostilePayloads {
		evs = append(evs, model.Event{At: fixedNow.Add(-time.Duration(i) * time.Second), Kind: model.EventGiveUp,
			StatementID: fmt.Sprintf("01ef%04x-0000-4000-8000-%012x", i, i), Endpoint: "ep" + p, Call: "Call" + p, Message: "msg " + p,
			RequestID: "r" + p, Err: &model.ErrorInfo{Message: "e" + p, RequestID: "q" + p},
			Flag: &model.Flag{Kind: model.FlagInactive, Severity: model.SeverityWarning, Detail: "d" + p}})
	}
	return evs
}

// hostileViews reach every view that shows server text.
var hostileViews = []struct {
	name string
	keys []string
}{
	{"operations", nil},
	{"detail", []string{"enter"}},
	{"detail-scrolled", []string{"enter", "pgdown"}},
	{"endpoints", []string{"tab", "enter"}},
	{"events", []string{"tab", "tab"}},
	{"confirm", []string{"x"}},
	{"filtered", []string{"/", "a", "p", "p"}},
}

// checkFrame asserts that the only escape sequences in a frame are SGR
// styling and that no control character, C1 or bidi control is left.
func checkFrame(t *testing.T, frame string, mono bool) {
	t.Helper()
	if !utf8.ValidString(frame) {
		t.Fatalf("frame is not valid UTF-8")
	}
	if mono && strings.ContainsRune(frame, 0x1b) {
		t.Fatalf("ESC in a NO_COLOR frame:\n%q", frame)
	}
	var state byte
	for s := frame; len(s) > 0; {
		seq, _, n, ns := ansi.DecodeSequence(s, state, nil)
		state = ns
		s = s[n:]
		if seq == "" {
			continue
		}
		if seq[0] == ansi.ESC {
			if !strings.HasPrefix(seq, "\x1b[") || !strings.HasSuffix(seq, "m") {
				t.Fatalf("escape sequence %q that is not styling", seq)
			}
			continue
		}
		for _, r := range seq {
			switch {
			case r == '\n':
			case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
				t.Fatalf("control %U in frame: %q", r, seq)
			case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
				t.Fatalf("bidi control %U in frame", r)
			}
		}
	}
}

func TestHostileTextEveryView(t *testing.T) {
	for _, v := range hostileViews {
		for _, sz := range [][2]int{{80, 24}, {200, 50}} {
			frames := map[string]string{}
			for _, variant := range []string{"color", "nocolor"} {
				t.Run(fmt.Sprintf("%s/%dx%d/%s", v.name, sz[0], sz[1], variant), func(t *testing.T) {
					e := newFakeEngine(hostileSnapshot())
					e.health.LastError = &model.ErrorInfo{Kind: model.KindTransport, Message: "hc" + hostilePayloads[0] + hostilePayloads[1]}
					o := testOptions()
					o.Renderer = testRenderer(termenv.ANSI256)
					if variant == "nocolor" {
						o.NoColor = true
					}
					m := syncModel(t, e, o, sz[0], sz[1])
					for _, ev := range hostileEvents() {
						m.Update(eventMsg{evs: []model.Event{ev}, ok: true})
					}
					press(m, v.keys...)
					frame := m.View()
					checkFrame(t, frame, variant == "nocolor")
					for _, bad := range []string{"pwned-title", "cHduZWQ"} {
						_ = bad // payload text may show (made visible); the sequence must not
					}
					frames[variant] = frame
				})
			}
			if c, p := frames["color"], frames["nocolor"]; c != "" && p != "" && ansi.Strip(c) != p {
				t.Errorf("%s %dx%d: the colour frame says something the NO_COLOR frame does not:\n%s\n---\n%s", v.name, sz[0], sz[1], ansi.Strip(c), p)
			}
		}
	}
}

// FuzzRenderer feeds arbitrary bytes as SQL, user and message through the
// Operations, detail and Events views.
func FuzzRenderer(f *testing.F) {
	for _, p := range hostilePayloads {
		f.Add(p, p, p)
	}
	f.Add("SELECT 1", "alice", "ok")
	f.Fuzz(func(t *testing.T, sql, user, msg string) {
		op := model.Operation{StatementID: "01ef0000-0000-4000-8000-000000000001", WarehouseID: "wh", User: user,
			ClientApplication: msg, SQL: sql, State: model.StateRunning, StartedAt: fixedNow.Add(-time.Minute),
			LastError: &model.ErrorInfo{Message: msg, RequestID: user}, ServerError: msg}
		s := model.NewSnapshot(fixedNow, model.Workspace{Host: "h"}, []model.Operation{op}, nil, nil, model.DefaultThresholds)
		e := newFakeEngine(s)
		o := testOptions()
		m := syncModel(t, e, o, 80, 24)
		m.Update(eventMsg{evs: []model.Event{{At: fixedNow, Kind: model.EventRetry, Message: msg, Call: user, StatementID: sql}}, ok: true})
		checkFrame(t, m.View(), false)
		press(m, "enter")
		checkFrame(t, m.View(), false)
		press(m, "esc", "tab", "tab")
		checkFrame(t, m.View(), false)
	})
}
