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
	hdr := &doc.GenManHeader{Title: "DBXTOP", Section: "1", Source: "dbxtop " + Version, Manual: "dbxtop manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
