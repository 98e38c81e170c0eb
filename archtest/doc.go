// Package archtest holds no code, only tests of the module's shape: one
// reads the allowed-imports table in docs/ARCHITECTURE.md and fails when
// `go list` shows a package importing something the table does not allow,
// so the picture in the document cannot drift from the code; others keep
// every test's external tools behind internal/testenv, every skip in the
// census of skips_test.go (none can happen under CI=true), and every
// hand-written function within 80 lines.
//
// It imports nothing from dbxtop: it reads the import graph, it is not
// part of it.
package archtest
