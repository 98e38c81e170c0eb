package tui

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is an io.Writer safe for the renderer and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunStopsWhenContextIsDone(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	defer e.closeEvents()
	in, inW := io.Pipe()
	defer inW.Close()
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, e, testOptions(), in, out) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v on ctx cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx was canceled")
	}
}

func TestRunQuitsOnQ(t *testing.T) {
	e := newFakeEngine(fixtureSnapshot())
	defer e.closeEvents()
	in, inW := io.Pipe()
	defer inW.Close()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), e, testOptions(), in, out) }()
	if _, err := inW.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not quit")
	}
	if s := out.String(); !bytes.Contains([]byte(s), []byte("\x1b[?1049h")) {
		t.Errorf("Run did not use the alternate screen: %q", s[:min(len(s), 80)])
	}
}
