package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO at the config path (the default one, or --config) is refused at
// once: opened without blocking, it is not a regular file.
func TestLoadRefusesAFIFOWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, optional := range []bool{true, false} {
		done := make(chan error, 1)
		go func() { _, err := Load(p, optional); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
				t.Fatalf("optional=%v: %v, want unreadable: not a regular file (a named pipe)", optional, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("optional=%v: Load blocked on a FIFO without a writer", optional)
		}
	}
	if _, err := Load("/dev/zero", false); err == nil || !strings.Contains(err.Error(), "a character device") {
		t.Fatalf("/dev/zero: %v", err)
	}
}

// Absurd nesting is refused fast and small: a 16,000-deep table header
// took 27 s and 1.5 GB (every prefix of the key was joined and stored).
func TestAbsurdNestingRefusedFast(t *testing.T) {
	const depth = 16000
	for name, doc := range map[string]string{
		"table header":  "[" + strings.Repeat("a.", depth-1) + "a]\nx = 1\n",
		"array header":  "[[" + strings.Repeat("a.", depth-1) + "a]]\n",
		"dotted key":    strings.Repeat("a.", depth-1) + "a = 1\n",
		"inline tables": "[contexts.p]\nhost = " + strings.Repeat("{a=", depth) + "1" + strings.Repeat("}", depth) + "\n",
		"arrays":        "[contexts.p]\nwarehouses = " + strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth) + "\n",
		// Not deep but many: 1 MiB of 16-deep headers took 49 s to decode.
		"many tables": strings.Repeat("[a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p]\n", (MaxFileSize-100)/34),
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Parse([]byte(doc))
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("an absurdly nested file was accepted")
			}
			// What the test guards against is a decode that takes the
			// better part of a minute (49 s before the depth and size
			// bounds); the bound is generous so that a loaded machine,
			// several times slower, does not fail it. Allocation below is
			// the figure that does not move with the machine.
			limit := 20 * time.Second
			if raceEnabled {
				limit *= 5
			}
			if took > limit {
				t.Errorf("refused in %s, want under %s (%v)", took, limit, err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 50<<20 {
				t.Errorf("allocated %d MB refusing it, want under 50 MB", alloc>>20)
			}
			if len(err.Error()) > 300 {
				t.Errorf("the error is %d bytes, want one short line: %.300s", len(err.Error()), err)
			}
		})
	}
}

// A config others may write decides where the token goes: one warning
// line, as ssh gives for its own config.
func TestWritableByOthersWarns(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte("refresh = \"10s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p, false)
	if err != nil || f.Warning() != "" {
		t.Fatalf("mode 0600: %v, warning %q", err, f.Warning())
	}
	for _, mode := range []os.FileMode{0o666, 0o620} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		f, err := Load(p, false)
		if err != nil {
			t.Fatal(err)
		}
		w := f.Warning()
		if !strings.Contains(w, "writable by others") || !strings.Contains(w, "chmod go-w "+p) || strings.Contains(w, "\n") {
			t.Errorf("mode %04o: warning %q, want one line naming the fix", mode, w)
		}
	}
}
