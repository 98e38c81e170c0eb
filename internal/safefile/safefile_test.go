package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
)

func TestReadRefusesAFIFOWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	testenv.FIFO(t, p)
	done := make(chan error, 1)
	go func() { _, _, err := Read(p, 1<<20); done <- err }()
	select {
	case err := <-done:
		var nr *NotRegularError
		if !errors.As(err, &nr) || nr.Kind != "a named pipe" {
			t.Fatalf("a FIFO: err %v, want NotRegularError naming a named pipe", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked on a FIFO without a writer")
	}
}

func TestReadRefusesDirectoriesDevicesAndLargeFiles(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Read(dir, 100); err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("a directory: %v", err)
	}
	if _, _, err := Read("/dev/zero", 100); err == nil || !strings.Contains(err.Error(), "a character device") {
		t.Errorf("/dev/zero: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 101), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(big, 100); !IsRefused(err) || !strings.Contains(err.Error(), "100-byte cap") {
		t.Errorf("101 bytes under a 100-byte cap: %v", err)
	}
	if _, _, err := Read(filepath.Join(dir, "none"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("hello"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ok, 0o666); err != nil {
		t.Fatal(err)
	}
	b, info, err := Read(ok, 5)
	if err != nil || string(b) != "hello" {
		t.Fatalf("a regular file at the cap: %q, %v", b, err)
	}
	if !WritableByOthers(info) {
		t.Errorf("mode %v: want writable by others", info.Mode())
	}
}

// WriteAtomic replaces a file whole, with the mode asked for (not the old
// file's), and leaves no temporary file beside it.
func TestWriteAtomicReplacesWithItsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	st, _ := os.Stat(p)
	if err != nil || string(b) != "new" || st.Mode().Perm() != 0o600 {
		t.Fatalf("after WriteAtomic: %q %v mode %v", b, err, st.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestCheckAndOpenAppendRefuseAFIFOWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	testenv.FIFO(t, p)
	for name, open := range map[string]func() error{
		"Check":      func() error { _, err := Check(p, 1<<20); return err },
		"OpenAppend": func() error { f, err := OpenAppend(p, 0o600); f.Close(); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- open() }()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || nr.Kind != "a named pipe" {
				t.Errorf("%s of a FIFO: err %v, want NotRegularError naming a named pipe", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked on a FIFO", name)
		}
	}
}

func TestCheckAndOpenAppend(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	f, err := OpenAppend(log, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("one\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if info, err := Check(log, 4); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("Check of the log: %v, %v", info, err)
	}
	if _, err := Check(log, 3); !IsRefused(err) {
		t.Errorf("Check over the cap: %v, want TooLargeError", err)
	}
	if _, err := Check(filepath.Join(dir, "missing"), 3); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Check of a missing file: %v", err)
	}
	if _, err := OpenAppend(dir, 0o600); err == nil {
		t.Errorf("OpenAppend of a directory succeeded")
	}
	if _, err := OpenAppend("/dev/null", 0o600); !IsRefused(err) {
		t.Errorf("OpenAppend of /dev/null: %v, want NotRegularError", err)
	}
}
