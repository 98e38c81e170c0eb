// Package archtest holds no code: its test reads the allowed-imports table
// in docs/ARCHITECTURE.md and fails when `go list` shows a package
// importing something the table does not allow, so the picture in the
// document cannot drift from the code.
//
// It imports nothing from dbxtop: it reads the import graph, it is not
// part of it.
package archtest
