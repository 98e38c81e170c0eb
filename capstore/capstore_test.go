package capstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

var at = time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)

const host = "https://adb-1.azuredatabricks.net"

func collect() (*[]string, func(string)) {
	var lines []string
	return &lines, func(s string) { lines = append(lines, s) }
}

func TestRoundTripAndXDG(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	p, err := DefaultPath(nil)
	if err != nil || p != filepath.Join(dir, "dbxtop", "learned-limits.json") {
		t.Fatalf("DefaultPath %q %v", p, err)
	}
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if p, _ := DefaultPath(env(map[string]string{"HOME": "/home/op", "XDG_STATE_HOME": "relative"})); p != "/home/op/.local/state/dbxtop/learned-limits.json" {
		t.Errorf("HOME fallback %q", p)
	}
	// systemd's StateDirectory= wins: the service's own directory.
	if p, _ := DefaultPath(env(map[string]string{"HOME": "/home/op", "XDG_STATE_HOME": dir, "STATE_DIRECTORY": "/var/lib/dbxtop:/var/lib/other"})); p != "/var/lib/dbxtop/learned-limits.json" {
		t.Errorf("STATE_DIRECTORY %q", p)
	}
	if _, err := DefaultPath(env(nil)); err == nil || !strings.Contains(err.Error(), "neither XDG_STATE_HOME nor HOME") {
		t.Errorf("no HOME: %v", err)
	}
	warns, warn := collect()
	s := Open(p, warn)
	if s.Learned(host, "vs-endpoint-1") != nil {
		t.Fatal("learned limit in a new store")
	}
	w := s.ForWorkspace(host)
	l := &model.LearnedLimit{Rows: 1_984_112, At: at, RequestID: "r-1"}
	if err := w.SetLearned("vs-endpoint-1", l); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("https://other", "vs-endpoint-1", &model.LearnedLimit{Rows: 7, At: at}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file %v %v", fi, err)
	}
	again := Open(p, warn)
	if got := again.ForWorkspace(host).Learned("vs-endpoint-1"); got == nil || *got != *l {
		t.Fatalf("reloaded %+v, want %+v", got, l)
	}
	if got := again.Learned("https://other", "vs-endpoint-1"); got == nil || got.Rows != 7 {
		t.Errorf("other workspace %+v", got)
	}
	// Forgetting persists too.
	if err := again.ForWorkspace(host).SetLearned("vs-endpoint-1", nil); err != nil {
		t.Fatal(err)
	}
	if Open(p, warn).Learned(host, "vs-endpoint-1") != nil {
		t.Error("forgotten limit came back")
	}
	if len(*warns) != 0 {
		t.Errorf("warnings on the happy path: %q", *warns)
	}
}

// TestBadStateFiles: missing, corrupt, unreadable and unwritable state
// files give at most one clear line each, and nothing is lost: the
// learned limit stays in memory and a corrupt file is moved aside.
func TestBadStateFiles(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(dir string) string // returns the path to open
		warnOpen string                  // substring of the one warning at Open ("" none)
		warnSet  string                  // substring of the one warning at Set ("" none)
		aside    bool                    // the corrupt file was moved aside, content intact
		persists bool                    // the learned limit reached the disk
	}{
		{"missing file and directory", func(d string) string { return filepath.Join(d, "new", "dbxtop", FileName) }, "", "", false, true},
		{"not JSON", func(d string) string { return write(t, d, "{not json") }, "is not a learned-limits file (invalid character", "", true, true},
		{"wrong schema", func(d string) string { return write(t, d, `{"schema":"other/v9","workspaces":{}}`) }, `schema "other/v9", want "dbxtop.learned-limits/v1"`, "", true, true},
		{"negative rows", func(d string) string {
			return write(t, d, `{"schema":"dbxtop.learned-limits/v1","workspaces":{"h":{"vs":{"rows":-3,"at":"2026-11-30T14:02:00Z"}}}}`)
		}, `endpoint "vs": rows -3`, "", true, true},
		{"too large", func(d string) string { return write(t, d, strings.Repeat(" ", maxFileSize+10)) }, "larger than 1048576 bytes", "", true, true},
		{"unreadable (a directory)", func(d string) string {
			p := filepath.Join(d, FileName)
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			return p
		}, "cannot read", "", false, false},
		{"a FIFO (opened without blocking, refused)", func(d string) string {
			p := filepath.Join(d, FileName)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, "not a regular file (a named pipe)", "", false, false},
		{"unwritable (parent is a file)", func(d string) string {
			f := filepath.Join(d, "file")
			if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(f, FileName)
		}, "", "cannot write", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := c.setup(dir)
			var before []byte
			if c.aside {
				before, _ = os.ReadFile(path)
			}
			warns, warn := collect()
			s := Open(path, warn)
			checkWarn(t, "Open", *warns, c.warnOpen, path)
			n := len(*warns)
			l := &model.LearnedLimit{Rows: 1_984_112, At: at}
			for range 3 { // repeated failures stay one line
				_ = s.Set(host, "vs-endpoint-1", l)
			}
			checkWarn(t, "Set", (*warns)[n:], c.warnSet, path)
			if got := s.Learned(host, "vs-endpoint-1"); got == nil || *got != *l {
				t.Errorf("in memory: %+v", got)
			}
			if got := Open(path, nil).Learned(host, "vs-endpoint-1"); (got != nil) != c.persists {
				t.Errorf("on disk: %+v, want persisted=%v", got, c.persists)
			}
			if c.aside {
				m, _ := filepath.Glob(path + ".corrupt-*")
				if len(m) != 1 {
					t.Fatalf("moved aside: %v", m)
				}
				if b, _ := os.ReadFile(m[0]); string(b) != string(before) {
					t.Error("the corrupt file's content changed")
				}
			}
		})
	}
}

func write(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, FileName)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkWarn(t *testing.T, when string, got []string, want, path string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Errorf("%s: unexpected warnings %q", when, got)
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("%s: %d warning lines %q, want exactly one", when, len(got), got)
	}
	w := got[0]
	if !strings.HasPrefix(w, "dbxtop: learned limits: ") || !strings.Contains(w, want) || !strings.Contains(w, path) || strings.ContainsAny(w, "\n\r") {
		t.Errorf("%s: warning %q, want one line naming %s and %q", when, w, path, want)
	}
}

func TestInMemoryOnly(t *testing.T) {
	s := Open("", nil)
	if err := s.Set(host, "vs", &model.LearnedLimit{Rows: 5, At: at}); err != nil || s.Learned(host, "vs") == nil {
		t.Fatalf("in-memory store: %v", err)
	}
	if got := s.Endpoints(host); len(got) != 1 || got[0] != "vs" {
		t.Errorf("Endpoints %v", got)
	}
}

// FuzzParse: any content either loads (every limit positive) or is a
// corrupt-file error (which Open moves aside, losing nothing).
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"schema":"dbxtop.learned-limits/v1","workspaces":{"https://h":{"vs":{"rows":1984112,"at":"2026-11-30T14:02:00Z","request_id":"r"}}}}`))
	f.Add([]byte(`{"schema":"dbxtop.learned-limits/v1","workspaces":{"h":{"vs":{"rows":0}}}}`))
	f.Add([]byte(`{"schema":"x\n\u001b[2J"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parse(b, "/state/learned-limits.json")
		if err != nil {
			var ce *corruptError
			if !errors.As(err, &ce) {
				t.Fatalf("%T %v, want a corrupt-file error", err, err)
			}
			return
		}
		for _, eps := range m {
			for n, l := range eps {
				if l.Rows <= 0 {
					t.Fatalf("%s: rows %d loaded", n, l.Rows)
				}
			}
		}
	})
}
