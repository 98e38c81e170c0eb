//go:build unix

package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
)

// A FIFO at the close queue's path is refused at start, at once: the
// open never waits for a writer.
func TestCloseQueueFIFORefusedAtStart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "q.json")
	testenv.FIFO(t, state)
	done := make(chan error, 1)
	go func() {
		s, err := Start(context.Background(), Options{Upstream: "http://127.0.0.1:1", StateFile: state, Logger: testLogger(t)},
			ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
		if err == nil {
			_ = s.Close(context.Background())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("start with a FIFO as the close queue: %v, want a refusal naming the pipe", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("start hangs on a FIFO at the close queue's path")
	}
}
