// Package report renders a model.Snapshot without a terminal UI: the human
// table and JSON of `dbxtop snapshot`, the Markdown incident report of the
// TUI's export, the Nagios exit code, and the 0600 file writer. Renderers
// never see credentials: a Snapshot holds none.
//
// It imports only model, sources and textfmt from dbxtop: it renders, it
// never drives the engine (no poller, tui, serve or cmd).
package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/dbxtop/dbxtop/internal/safefile"
	"github.com/dbxtop/dbxtop/model"
)

// Exit codes of `dbxtop snapshot` (Nagios plugin convention, docs/snapshot.md).
const (
	ExitOK       = 0 // nothing flagged
	ExitWarning  = 1 // warnings only
	ExitCritical = 2 // at least one critical flag
	ExitUnknown  = 3 // could not observe, or invalid arguments (decided by the caller)
)

// ExitCode maps a snapshot's most severe flag to 0, 1 or 2. Observation
// errors (exit 3) are the caller's to detect: a snapshot that could not be
// taken may well hold no flags.
func ExitCode(s model.Snapshot) int {
	switch s.MaxSeverity() {
	case model.SeverityCritical:
		return ExitCritical
	case model.SeverityWarning:
		return ExitWarning
	}
	return ExitOK
}

// JSON writes the snapshot object (docs/model.md), indented, with a trailing newline.
func JSON(w io.Writer, s model.Snapshot) error { return JSONValue(w, s) }

// JSONValue writes v as indented JSON with a trailing newline.
func JSONValue(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// JSONLine writes the snapshot as one line (for --watch: JSON lines).
func JSONLine(w io.Writer, s model.Snapshot) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteFile0600 writes data to path readable by the owner only: through a
// temporary file in the same directory (created 0600), synced, then renamed
// over path, so a reader never sees a half-written export and an existing
// file with looser permissions is replaced, not reused.
func WriteFile0600(path string, data []byte) error {
	if err := safefile.WriteAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
