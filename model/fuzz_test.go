package model

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSnapshotDecode: decoding arbitrary bytes never panics, and whatever
// decodes re-encodes to JSON that decodes and re-encodes to the same bytes.
func FuzzSnapshotDecode(f *testing.F) {
	if golden, err := os.ReadFile(filepath.Join("testdata", "snapshot.golden.json")); err == nil {
		f.Add(golden)
	}
	for _, seed := range []string{
		`{"schema":"dbxtop.snapshot/v1"}`,
		`{"schema":"dbxtop.snapshot/v1","generated_at":null,"operations":null,"endpoints":[],"errors":[{}]}`,
		`{"schema":"dbxtop.snapshot/v1","operations":[{"state":"RUNNING","close":{"state":"n/a"},"inactive_for_s":1.5e2,"open":null}]}`,
		`{"schema":"dbxtop.snapshot/v1","endpoints":[{"name":"e","row_limit":0,"usage":0.5,"eta_full_s":-0.000000001}]}`,
		`{"schema":"dbxtop.snapshot/v1","generated_at":"9999-12-31T23:59:59.999999999-01:00"}`,
		`{"schema":"dbxtop.snapshot/v1","operations":[{"state":"FAILED","close":{"state":"failed"},"flags":[{"kind":"REAPED","severity":"warning"}]}]}`,
		`[]`, `null`, `{"schema":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Snapshot
		if json.Unmarshal(data, &s) != nil {
			return
		}
		b1, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("decoded snapshot does not encode: %v", err)
		}
		var s2 Snapshot
		if err := json.Unmarshal(b1, &s2); err != nil {
			t.Fatalf("own output does not decode: %v\n%s", err, b1)
		}
		b2, err := json.Marshal(s2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("unstable re-encoding (%v)\n%s\n%s", err, b1, b2)
		}
	})
}
