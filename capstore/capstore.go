// Package capstore keeps the Vector Search row limits dbxtop learned from
// RESOURCE_EXHAUSTED answers (docs/capacity.md, "Learned limits") in a small
// state file, $XDG_STATE_HOME/dbxtop/learned-limits.json, so that a restart
// keeps them. A missing file is normal; a corrupt, unreadable or unwritable
// one gives one warning line and dbxtop goes on with what it has in memory:
// nothing is lost (a corrupt file is moved aside, never overwritten).
//
// It imports only model and textfmt from dbxtop, never poller (which sees it
// through poller.LearnedLimits) or cmd (which wires it).
package capstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dbxtop/dbxtop/internal/safefile"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Schema tags the file's format.
const Schema = "dbxtop.learned-limits/v1"

// FileName is the state file's name inside the state directory.
const FileName = "learned-limits.json"

// maxFileSize bounds what is read: a few thousand endpoints fit in far less.
const maxFileSize = 1 << 20

type fileFormat struct {
	Schema string `json:"schema"`
	// Workspaces maps a workspace host to its endpoints' learned limits.
	Workspaces map[string]map[string]model.LearnedLimit `json:"workspaces"`
}

// DefaultPath is $STATE_DIRECTORY/learned-limits.json when systemd gives
// the service a state directory (StateDirectory=; the first when it gives
// several), else $XDG_STATE_HOME/dbxtop/learned-limits.json, else
// ~/.local/state/dbxtop/learned-limits.json (the XDG default). getenv is
// injectable for tests (os.LookupEnv when nil).
func DefaultPath(getenv func(string) (string, bool)) (string, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	if x, ok := getenv("STATE_DIRECTORY"); ok {
		if first, _, _ := strings.Cut(x, ":"); filepath.IsAbs(first) {
			return filepath.Join(first, FileName), nil
		}
	}
	if x, ok := getenv("XDG_STATE_HOME"); ok && filepath.IsAbs(x) {
		return filepath.Join(x, "dbxtop", FileName), nil
	}
	if h, ok := getenv("HOME"); ok && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "dbxtop", FileName), nil
	}
	return "", errors.New("cannot find the state directory: neither XDG_STATE_HOME nor HOME is set")
}

// Store is the learned limits of every workspace, in memory and in the
// state file. Safe for concurrent use.
type Store struct {
	path string
	warn func(string)

	mu       sync.Mutex
	limits   map[string]map[string]model.LearnedLimit
	lastWarn string
	// frozen: the file could not be read or moved aside, so writing it
	// would lose its content; limits stay in memory only.
	frozen bool
}

// Open loads the state file at path. It never fails: a missing file is an
// empty store; any other problem is reported through warn as one line and
// the store starts empty (warn may be nil). path "" keeps limits in memory.
func Open(path string, warn func(string)) *Store {
	if warn == nil {
		warn = func(string) {}
	}
	s := &Store{path: path, warn: warn, limits: map[string]map[string]model.LearnedLimit{}}
	if path == "" {
		return s
	}
	f, err := s.read()
	var ce *corruptError
	switch {
	case err == nil:
		s.limits = f
	case errors.Is(err, fs.ErrNotExist):
	case errors.As(err, &ce):
		s.moveAside(err)
	default:
		s.frozen = true
		s.warnf("%v; learned limits are kept in memory only", err)
	}
	return s
}

// moveAside renames a corrupt file so that nothing in it is lost, and says
// so in one line.
func (s *Store) moveAside(cause error) {
	aside := s.path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(s.path, aside); err != nil {
		s.frozen = true
		s.warnf("%v; cannot move it aside (%v); learned limits are kept in memory only", cause, unwrapPath(err))
		return
	}
	s.warnf("%v; moved to %s, learning starts afresh", cause, aside)
}

// Path is the state file's path ("" when in memory only).
func (s *Store) Path() string { return s.path }

func (s *Store) warnf(format string, a ...any) {
	msg := textfmt.Line(fmt.Sprintf("dbxtop: learned limits: "+format, a...))
	if msg == s.lastWarn {
		return
	}
	s.lastWarn = msg
	s.warn(msg)
}

// corruptError is a file that exists but is not a learned-limits file.
type corruptError struct{ path, why string }

func (e *corruptError) Error() string {
	return e.path + " is not a learned-limits file (" + e.why + ")"
}

func (s *Store) read() (map[string]map[string]model.LearnedLimit, error) {
	// Non-blocking, regular files only: a FIFO here would otherwise hang
	// every command, deaf to signals.
	b, _, err := safefile.Read(s.path, maxFileSize)
	var tl *safefile.TooLargeError
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		// Nothing there (ENOTDIR: a parent is a file; writing will say so).
		return nil, fs.ErrNotExist
	case errors.As(err, &tl):
		return nil, &corruptError{s.path, fmt.Sprintf("larger than %d bytes", maxFileSize)}
	case safefile.IsRefused(err):
		return nil, fmt.Errorf("cannot read %s: %w", s.path, err)
	case err != nil:
		return nil, fmt.Errorf("cannot read %s: %w", s.path, unwrapPath(err))
	}
	return parse(b, s.path)
}

// parse reads the file's content; any problem is a *corruptError.
func parse(b []byte, path string) (map[string]map[string]model.LearnedLimit, error) {
	if len(b) > maxFileSize {
		return nil, &corruptError{path, fmt.Sprintf("larger than %d bytes", maxFileSize)}
	}
	var f fileFormat
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, &corruptError{path, err.Error()}
	}
	if f.Schema != Schema {
		return nil, &corruptError{path, fmt.Sprintf("schema %q, want %q", truncate(f.Schema, 40), Schema)}
	}
	out := map[string]map[string]model.LearnedLimit{}
	for host, eps := range f.Workspaces {
		for name, l := range eps {
			if l.Rows <= 0 {
				return nil, &corruptError{path, fmt.Sprintf("endpoint %q: rows %d", truncate(name, 60), l.Rows)}
			}
			if out[host] == nil {
				out[host] = map[string]model.LearnedLimit{}
			}
			out[host][name] = l
		}
	}
	return out, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Learned is the limit learned for an endpoint of a workspace (nil: none).
func (s *Store) Learned(host, endpoint string) *model.LearnedLimit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.limits[host][endpoint]; ok {
		return &l
	}
	return nil
}

// Set records (or, with nil, forgets) an endpoint's learned limit and
// writes the file. The change is kept in memory whatever happens to the
// file; a failure to write is reported once (one line) and returned.
func (s *Store) Set(host, endpoint string, l *model.LearnedLimit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	apply := func(m map[string]map[string]model.LearnedLimit) {
		if l == nil {
			delete(m[host], endpoint)
			if len(m[host]) == 0 {
				delete(m, host)
			}
			return
		}
		if m[host] == nil {
			m[host] = map[string]model.LearnedLimit{}
		}
		m[host][endpoint] = *l
	}
	apply(s.limits)
	if s.path == "" || s.frozen {
		return nil
	}
	// Merge with what another dbxtop may have written meanwhile; a
	// corrupt file is moved aside first so that writing loses nothing.
	disk, err := s.read()
	var ce *corruptError
	switch {
	case err == nil:
		for h, eps := range disk {
			for n, x := range eps {
				if _, mine := s.limits[h][n]; !mine && !(h == host && n == endpoint) {
					if s.limits[h] == nil {
						s.limits[h] = map[string]model.LearnedLimit{}
					}
					s.limits[h][n] = x
				}
			}
		}
	case errors.As(err, &ce):
		// Broken since Open (another process, a disk): keep it too.
		if s.moveAside(err); s.frozen {
			return err
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		s.warnf("%v; learned limits are kept in memory only", err)
		return err
	}
	if err := s.write(); err != nil {
		s.warnf("cannot write %s: %v; learned limits are kept in memory only", s.path, unwrapPath(err))
		return err
	}
	return nil
}

// write replaces the file atomically (temp file + rename), mode 0600.
func (s *Store) write() error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	f := fileFormat{Schema: Schema, Workspaces: s.limits}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteAtomic(s.path, append(b, '\n'), 0o600)
}

// Workspace is the store seen from one workspace, the shape the poller
// asks for.
type Workspace struct {
	s    *Store
	host string
}

// ForWorkspace returns the view of one workspace's endpoints.
func (s *Store) ForWorkspace(host string) Workspace { return Workspace{s: s, host: host} }

// Learned is the endpoint's learned limit (nil: none).
func (w Workspace) Learned(endpoint string) *model.LearnedLimit { return w.s.Learned(w.host, endpoint) }

// SetLearned records or (nil) forgets the endpoint's learned limit.
func (w Workspace) SetLearned(endpoint string, l *model.LearnedLimit) error {
	return w.s.Set(w.host, endpoint, l)
}

// Endpoints lists the endpoints with a learned limit in a workspace, sorted.
func (s *Store) Endpoints(host string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.limits[host] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
