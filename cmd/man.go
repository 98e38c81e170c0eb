package cmd

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra/doc"
)

// WriteManPages writes one man page per command (section 1) into dir,
// generated from the cobra commands themselves, so they say what the
// command line says. Release archives carry them (.goreleaser.yaml runs
// `go run ./cmd/mangen`).
func WriteManPages(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	a := newApp(io.Discard, io.Discard, os.LookupEnv)
	root := a.newRootCmd()
	root.DisableAutoGenTag = true // no generation date: reproducible pages
	// No Title: cobra titles each page by its command (DBXTOP-SERVE), and
	// dates it from SOURCE_DATE_EPOCH when set (release builds set it to
	// the commit's time), else from now.
	hdr := &doc.GenManHeader{Section: "1", Source: "dbxtop " + Version, Manual: "dbxtop manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
