package model

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/dbxtop/dbxtop/internal/peertest"
)

// Every string of a snapshot decoded from a peer (a serve that `dbxtop
// attach` reads, a file) is cleaned where it is decoded. The wire form is
// filled by reflection, so a field added to it later fails this test until
// its decoder cleans it.
func TestDecodedSnapshotStringsAreClean(t *testing.T) {
	var w snapshotWire
	peertest.Fill(&w)
	// The values decoding checks rather than cleans must be valid to get
	// past the check; their cleaning is not in question.
	w.Schema = SnapshotSchema
	for i := range w.Operations {
		w.Operations[i].State = StateRunning
		w.Operations[i].Close.State = CloseFailed
		validFlags(w.Operations[i].Flags)
	}
	for i := range w.Endpoints {
		validFlags(w.Endpoints[i].Flags)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("decode: %v", err)
	}
	bad, seen := peertest.Unclean(s, "SQL")
	for _, p := range bad {
		t.Errorf("%s keeps the peer's control sequences: clean it where it is decoded", p)
	}
	if seen < 40 {
		t.Errorf("only %d strings came through decoding: the fill did not reach the wire form", seen)
	}
}

func validFlags(fs []Flag) {
	for i := range fs {
		fs[i].Severity = SeverityWarning
	}
}

// TestSanitizeEventChecksTheKind: a kind that is not one of the known
// kinds becomes EventUnknown, the kind (cleaned, cut short) leading the
// message; a known kind is kept.
func TestSanitizeEventChecksTheKind(t *testing.T) {
	ev := SanitizeEvent(Event{Kind: EventKind("\x1b[?1049l" + strings.Repeat("k", 100)), Message: "m"})
	if ev.Kind != EventUnknown || !strings.HasPrefix(ev.Message, "(kind ␛") || !strings.HasSuffix(ev.Message, "…) m") {
		t.Errorf("hostile kind: %q %q", ev.Kind, ev.Message)
	}
	// Every EventKind constant declared in event.go is known, so a kind
	// added later is not shown as unknown by attach.
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []EventKind
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "EventKind" {
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(lit.Value)
						kinds = append(kinds, EventKind(s))
					}
				}
			}
		}
		return true
	})
	if len(kinds) < 10 {
		t.Fatalf("found %d EventKind constants in event.go", len(kinds))
	}
	for _, k := range kinds {
		if got := SanitizeEvent(Event{Kind: k, Message: "m"}); got.Kind != k || got.Message != "m" {
			t.Errorf("known kind %q became %q %q", k, got.Kind, got.Message)
		}
	}
}
