package keymap

import (
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

func keyMsg(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case " ":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func TestDefaultBindingsMatch(t *testing.T) {
	k := DefaultKeyMap()
	cases := map[string]key.Binding{
		"a": k.Adopt, "c": k.Close, "x": k.Cancel, "y": k.CopyID, "Y": k.CopySQL,
		"e": k.Export, "/": k.Filter, "f": k.Flagged, " ": k.Pause, "s": k.Sort,
		"S": k.SortReverse, "?": k.Help, "q": k.Quit, "tab": k.NextView, "enter": k.Detail,
	}
	for s, b := range cases {
		if !key.Matches(keyMsg(s), b) {
			t.Errorf("key %q does not match its binding %v", s, b.Help())
		}
	}
}

func TestReadOnlyDisablesAndHidesMutatingKeys(t *testing.T) {
	k := DefaultKeyMap()
	k.SetReadOnly(true)
	if !k.ReadOnly() {
		t.Fatal("ReadOnly() = false after SetReadOnly(true)")
	}
	for _, s := range []string{"a", "c", "x"} {
		if key.Matches(keyMsg(s), k.Adopt, k.Close, k.Cancel) {
			t.Errorf("key %q still matches a mutating binding in read-only mode", s)
		}
	}
	for _, b := range k.ShortHelp() {
		if d := b.Help().Desc; d == "cancel statement" || d == "re-close" {
			t.Errorf("short help advertises %q in read-only mode", d)
		}
	}
	for _, g := range k.FullHelp() {
		for _, b := range g {
			switch b.Help().Key {
			case "a", "c", "x":
				t.Errorf("full help advertises %q in read-only mode", b.Help().Key)
			}
		}
	}
	// Copy and export stay: they change nothing on the server.
	if !key.Matches(keyMsg("y"), k.CopyID) || !key.Matches(keyMsg("e"), k.Export) {
		t.Error("read-only mode disabled a non-mutating key")
	}
	k.SetReadOnly(false)
	if !key.Matches(keyMsg("x"), k.Cancel) {
		t.Error("SetReadOnly(false) did not re-enable cancel")
	}
}

func TestHelpIsASCII(t *testing.T) {
	// --ascii renders help text verbatim, so it must not need a fallback.
	k := DefaultKeyMap()
	for _, g := range k.FullHelp() {
		for _, b := range g {
			for _, r := range b.Help().Key + b.Help().Desc {
				if r > 127 {
					t.Errorf("help %q/%q is not ASCII", b.Help().Key, b.Help().Desc)
				}
			}
		}
	}
}
