//go:build unix

package testenv

import (
	"syscall"
	"testing"
)

// FIFO makes a named pipe at path for the tests that prove a file is
// never waited on. A failure fails the test: in a fresh temporary
// directory it must be possible, so it never hides as a skip.
func FIFO(t testing.TB, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v (a FIFO in a fresh temporary directory must be possible on this platform)", path, err)
	}
	return path
}
