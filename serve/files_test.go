package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/poller"

	"github.com/dbxtop/dbxtop/internal/testenv"
)

// TestServeFilesNeverHangOnAFIFO: the web configuration and the TLS files
// (which exporter-toolkit and crypto/tls read themselves) are checked
// before they are handed over: a FIFO at any of them is refused at once.
func TestServeFilesNeverHangOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	testenv.FIFO(t, fifo)
	conf := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(conf, []byte("tls_server_config:\n  cert_file: fifo\n  key_file: fifo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"web config": {WebConfigFile: fifo},
		"cert_file":  {WebConfigFile: conf},
		"--tls-cert": {TLSCert: fifo, TLSKey: fifo},
	} {
		o.Listen, o.Fleet, o.Token = "127.0.0.1:0", poller.NewFleet(time.Hour), testRead
		done := make(chan error, 1)
		go func() {
			s, err := New(o)
			if err == nil {
				_ = s.ln.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "a named pipe") {
				t.Errorf("%s at a FIFO: %v, want a refusal naming a named pipe", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s at a FIFO: serve.New still blocked after 20 s", name)
		}
	}
}
