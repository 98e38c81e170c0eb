package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
)

// TestNamedFilesNeverHangOnAFIFO: a FIFO (or any file that is not a
// regular one) where a user names a file — serve's token files, serve's
// and snapshot's --log-file — is refused at once, naming what it is,
// never waited on (a plain open blocks until a writer or reader comes,
// deaf to SIGTERM).
func TestNamedFilesNeverHangOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	testenv.FIFO(t, fifo)
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("read-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABRICKS_TOKEN": "dapi-test", "HOME": dir}
	ws := []string{"--host", "http://127.0.0.1:1", "--http-path", "/sql/1.0/warehouses/w"}
	for _, args := range [][]string{
		{"serve", "--listen", "127.0.0.1:0", "--serve-token-file", fifo},
		{"serve", "--listen", "127.0.0.1:0", "--serve-token-file", tok, "--act-token-file", fifo},
		{"serve", "--listen", "127.0.0.1:0", "--serve-token-file", tok, "--log-file", fifo},
		{"snapshot", "--log-file", fifo},
	} {
		args = append(args, ws...)
		done := make(chan result, 1)
		go func() { done <- runCLI(t, env, args...) }()
		select {
		case r := <-done:
			if r.code == 0 || !strings.Contains(r.stderr, "a named pipe") {
				t.Errorf("%q: exit %d, stderr %q; want a refusal naming a named pipe", args, r.code, r.stderr)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%q: still running after 20 s: blocked on the FIFO", args)
		}
	}
}

// TestTokenFileOthersMayReadWarns: a token file that users other than its
// owner may read gets one warning line (as ssh warns of a private key); a
// 0600 one gets none.
func TestTokenFileOthersMayReadWarns(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[os.FileMode]bool{0o600: false, 0o400: false, 0o640: true, 0o644: true} {
		p := filepath.Join(dir, mode.String())
		if err := os.WriteFile(p, []byte("read-0123456789abcdef\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		tok, warn, err := readTokenFile(p, "--serve-token-file")
		if err != nil || tok != "read-0123456789abcdef" {
			t.Fatalf("%v: %q %v", mode, tok, err)
		}
		if got := warn != ""; got != want || strings.Contains(warn, tok) || strings.Contains(warn, "\n") {
			t.Errorf("mode %v: warning %q, want one: %v (one line, without the token)", mode, warn, want)
		}
	}
}
