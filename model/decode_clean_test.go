package model

import (
	"encoding/json"
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
