// Package config reads dbxtop's configuration file
// ($XDG_CONFIG_HOME/dbxtop/config.toml) and resolves the effective
// settings of each workspace context: command-line flags over the file,
// the file over built-in defaults (docs/configuration.md).
//
// The file never holds a token: authentication stays with
// ~/.databrickscfg profiles and the environment. Unknown keys are errors
// that name the key and its line, so a typo is never silently ignored.
//
// It imports only model, sources and textfmt from dbxtop, never poller,
// tui, serve or cmd: the engine and the views are given what it resolves.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/dbxtop/dbxtop/internal/safefile"
)

// MaxFileSize bounds what Load reads: a config file is a few kilobytes;
// anything larger is a mistake (a log file passed to --config).
const MaxFileSize = 1 << 20

// File is the parsed configuration file. Every field is optional; a nil
// pointer or empty value means "not set in the file".
type File struct {
	// CurrentContext is the context used when no --context is given.
	CurrentContext string `toml:"current_context"`
	// Refresh, Window and the thresholds apply to every context unless
	// the context sets its own.
	Refresh    *Duration  `toml:"refresh"`
	Window     *Duration  `toml:"window"`
	Thresholds Thresholds `toml:"thresholds"`
	UI         UI         `toml:"ui"`
	ExportDir  string     `toml:"export_dir"`
	Colors     Colors     `toml:"colors"`
	// Endpoints holds per-endpoint settings that apply in every context.
	Endpoints map[string]Endpoint `toml:"endpoints"`
	Contexts  map[string]Context  `toml:"contexts"`

	path    string         // where it was read from; "" when there was none
	warning string         // see Warning
	lines   map[string]int // dotted key → line, for messages and `config show`
}

// Thresholds are the flag thresholds (the command line's
// --inactivity-warn, --server-idle-timeout and --leak-after).
type Thresholds struct {
	InactivityWarn    *Duration `toml:"inactivity_warn"`
	ServerIdleTimeout *Duration `toml:"server_idle_timeout"`
	LeakAfter         *Duration `toml:"leak_after"`
}

// UI holds the TUI's defaults.
type UI struct {
	View    string   `toml:"view"`    // operations | endpoints | events | clients
	Sort    string   `toml:"sort"`    // a model.SortKey: severity, state, age, …
	Columns []string `toml:"columns"` // Operations columns to show, in order
}

// Colors override the TUI's palette: lipgloss colours, "#rrggbb" or an
// ANSI number 0–255. Colour never carries information alone, so these
// are taste, not meaning.
type Colors struct {
	Warning  string `toml:"warning"`
	Critical string `toml:"critical"`
	OK       string `toml:"ok"`
	Accent   string `toml:"accent"`
	Dim      string `toml:"dim"`
}

// Endpoint is the configuration of one Vector Search endpoint.
type Endpoint struct {
	// RowLimit overrides the endpoint's published capacity (rows).
	RowLimit *int64 `toml:"row_limit"`
}

// Context is one named workspace, a table [contexts.NAME].
type Context struct {
	Host       string   `toml:"host"`
	Profile    string   `toml:"profile"`
	Warehouses []string `toml:"warehouses"`
	HTTPPath   string   `toml:"http_path"`
	Proxy      string   `toml:"proxy"` // the proxy's admin URL (token in DBXTOP_PROXY_TOKEN)
	// Proxies are more proxies, or discovery specs (dns+http://name:port,
	// file://path): docs/proxy.md "Many proxies". Read with proxy.
	Proxies []string  `toml:"proxies"`
	Refresh *Duration `toml:"refresh"`
	// Thresholds of this workspace (its server's reaper may differ).
	InactivityWarn    *Duration           `toml:"inactivity_warn"`
	ServerIdleTimeout *Duration           `toml:"server_idle_timeout"`
	LeakAfter         *Duration           `toml:"leak_after"`
	Endpoints         map[string]Endpoint `toml:"endpoints"`
}

// Duration is a TOML string in Go syntax ("30s", "5m", "1h30m").
type Duration struct{ time.Duration }

// UnmarshalText refuses a bare number rather than guessing its unit.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalText writes Go syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ParseDuration parses Go duration syntax and says how to write one when
// the text is not. Shared with the command line so that a file and a
// flag accept exactly the same values.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	if s != "" && strings.Trim(s, "0123456789.+-") == "" {
		return 0, errors.New("missing unit: write e.g. 30s, 5m or 1h30m")
	}
	return 0, errors.New("not a duration: write e.g. 30s, 5m or 1h30m")
}

// Path is the file dbxtop reads when --config is not given:
// $XDG_CONFIG_HOME/dbxtop/config.toml, else ~/.config/dbxtop/config.toml.
// getenv is injectable for tests (os.LookupEnv otherwise).
func Path(getenv func(string) (string, bool)) (string, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	if x, ok := getenv("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
		return filepath.Join(x, "dbxtop", "config.toml"), nil
	}
	home, ok := getenv("HOME")
	if !ok || home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find the config directory: neither XDG_CONFIG_HOME nor HOME is set")
		}
		home = h
	}
	return filepath.Join(home, ".config", "dbxtop", "config.toml"), nil
}

// ErrUnreadable marks a file that could not be read (as opposed to one
// that was read and is invalid): `config validate` exits 1 for it, 2 for
// an invalid one.
var ErrUnreadable = errors.New("unreadable")

// Load reads and validates the file at path. A missing file is not an
// error when optional is true (the default location need not exist); it
// is when the operator named it with --config.
func Load(path string, optional bool) (*File, error) {
	data, info, err := safefile.Read(path, MaxFileSize)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return &File{}, nil
		}
		if safefile.IsRefused(err) {
			return nil, fmt.Errorf("config file %s: %w: %w", path, ErrUnreadable, err)
		}
		return nil, fmt.Errorf("config file %s: %w: %w", path, ErrUnreadable, unwrapPathError(err))
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	f.path = path
	if safefile.WritableByOthers(info) {
		// As ssh does for its config: whoever can write this file chooses
		// the workspace (and so where the token goes).
		f.warning = fmt.Sprintf("dbxtop: warning: config file %s is writable by others (mode %04o): whoever can write it chooses the host dbxtop sends your token to; run chmod go-w %s",
			path, info.Mode().Perm(), path)
	}
	return f, nil
}

// Warning is one line to print when the file is unsafe (writable by
// others), "" otherwise.
func (f *File) Warning() string { return f.warning }

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse decodes and validates a config document. Its errors name the key
// and line: `line 12: unknown key contexts.prod.hots`.
func Parse(data []byte) (*File, error) {
	lines, perr := keyLines(data)
	if perr != nil {
		return nil, perr
	}
	f := &File{lines: lines}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return nil, decodeError(err, lines)
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// KeyError is an invalid key in the file: which key, on which line, why.
type KeyError struct {
	Key  string
	Line int // 0 when unknown
	Msg  string
}

func (e *KeyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Key, e.Msg)
}

// secretKeys are refused with a pointer to where tokens belong, rather
// than as merely unknown: someone tried to put a credential in the file.
var secretKeys = map[string]bool{"token": true, "password": true, "client_secret": true,
	"pat": true, "access_token": true, "secret": true, "admin_token": true, "serve_token": true}

func decodeError(err error, lines map[string]int) error {
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) && len(sm.Errors) > 0 {
		var errs []error
		for _, de := range sm.Errors {
			key := strings.Join(de.Key(), ".")
			row, _ := de.Position()
			msg := "unknown key (see docs/configuration.md for the keys dbxtop reads)"
			if k := de.Key(); len(k) > 0 && secretKeys[strings.ToLower(k[len(k)-1])] {
				msg = "credentials never go in this file: use a ~/.databrickscfg profile (profile = \"…\") or the environment (DATABRICKS_TOKEN)"
			}
			errs = append(errs, &KeyError{Key: key, Line: row, Msg: msg})
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		key := strings.Join(de.Key(), ".")
		if key == "" {
			return fmt.Errorf("line %d: %s", row, de.Error())
		}
		return &KeyError{Key: key, Line: row, Msg: de.Error()}
	}
	return err
}

// Source is where dbxtop read its configuration: "" when no file exists.
func (f *File) Source() string { return f.path }

// Line is the line of a dotted key in the file (0 when not set there).
func (f *File) Line(key string) int { return f.lines[key] }

// ContextNames lists the file's contexts, sorted.
func (f *File) ContextNames() []string {
	names := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// EndpointRowLimit is the row limit the file sets for a Vector Search
// endpoint in a workspace context: the context's own
// [contexts.NAME.endpoints."ENDPOINT"] row_limit first, then the global
// [endpoints."ENDPOINT"] row_limit. ok is false when neither sets one
// (the endpoint's tag, learned or published limit applies). ctxName may be
// "" (no context: only the global table).
//
// This is the one place capacity code asks for a configured limit; the
// row_limit_source it reports for such a limit is "config".
func (f *File) EndpointRowLimit(ctxName, endpoint string) (int64, bool) {
	if f == nil {
		return 0, false
	}
	if c, ok := f.Contexts[ctxName]; ok {
		if e, ok := c.Endpoints[endpoint]; ok && e.RowLimit != nil {
			return *e.RowLimit, true
		}
	}
	if e, ok := f.Endpoints[endpoint]; ok && e.RowLimit != nil {
		return *e.RowLimit, true
	}
	return 0, false
}

// RowLimits are every row limit the file sets for a context's endpoints
// (global [endpoints] overridden by the context's own), as the engine's
// poller.Options.RowLimits wants them; nil when there are none.
func (f *File) RowLimits(ctxName string) map[string]int64 {
	if f == nil {
		return nil
	}
	out := map[string]int64{}
	for name := range f.Endpoints {
		if v, ok := f.EndpointRowLimit(ctxName, name); ok {
			out[name] = v
		}
	}
	if c, ok := f.Contexts[ctxName]; ok {
		for name := range c.Endpoints {
			if v, ok := f.EndpointRowLimit(ctxName, name); ok {
				out[name] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
