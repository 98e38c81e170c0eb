package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/dbxtop/dbxtop/model"
)

// Views the TUI can open on (ui.view).
var Views = []string{"operations", "endpoints", "events", "clients", "warehouses"}

// Columns of the Operations table (ui.columns), in their default order.
// "workspace" shows only when several workspaces are watched.
var Columns = []string{"flag", "statement", "state", "user", "warehouse", "workspace", "age", "idle", "close", "retries", "sql"}

// DefaultColumns are shown when the file does not choose.
var DefaultColumns = []string{"flag", "statement", "state", "user", "warehouse", "workspace", "age", "idle", "close", "retries", "sql"}

var (
	contextNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	warehouseIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	colorRe       = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)
)

// AllContexts is the --context value that selects every context.
const AllContexts = "all"

// validate reports every bad value in the file at once, ordered by line,
// so one edit fixes them all.
func (f *File) validate() error {
	v := &validator{f: f}
	v.general()
	v.ui()
	v.colors()
	v.endpoints("endpoints.", f.Endpoints)
	v.contexts()
	sort.SliceStable(v.errs, func(i, j int) bool { return lineOf(v.errs[i]) < lineOf(v.errs[j]) })
	return errors.Join(v.errs...)
}

// validator collects the errors of one File, each with its key's line.
type validator struct {
	f    *File
	errs []error
}

func (v *validator) bad(key, format string, args ...any) {
	v.errs = append(v.errs, &KeyError{Key: key, Line: v.f.lines[key], Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) dur(key string, d *Duration, min time.Duration) {
	if d != nil && d.Duration < min {
		v.bad(key, "must be at least %s", min)
	}
}

// general checks the top-level timings and the export directory.
func (v *validator) general() {
	f := v.f
	v.dur("refresh", f.Refresh, model.MinRefresh)
	if f.Window != nil && (f.Window.Duration < model.MinWindow || f.Window.Duration > model.MaxWindow) {
		v.bad("window", "must be between %s and %s", model.MinWindow, model.MaxWindow)
	}
	v.dur("thresholds.inactivity_warn", f.Thresholds.InactivityWarn, model.MinThreshold)
	v.dur("thresholds.server_idle_timeout", f.Thresholds.ServerIdleTimeout, model.MinThreshold)
	v.dur("thresholds.leak_after", f.Thresholds.LeakAfter, model.MinThreshold)
}

// ui checks the [ui] table and where exports go.
func (v *validator) ui() {
	f := v.f
	if view := f.UI.View; view != "" && !slices.Contains(Views, view) {
		v.bad("ui.view", "%q: must be one of %s", view, strings.Join(Views, ", "))
	}
	if s := f.UI.Sort; s != "" && !slices.Contains(model.SortKeys, model.SortKey(s)) {
		v.bad("ui.sort", "%q: must be one of %s", s, joinKeys(model.SortKeys))
	}
	if f.UI.Columns != nil {
		if len(f.UI.Columns) == 0 {
			v.bad("ui.columns", "must name at least one column")
		}
		seen := map[string]bool{}
		for _, c := range f.UI.Columns {
			switch {
			case !slices.Contains(Columns, c):
				v.bad("ui.columns", "%q: must be one of %s", c, strings.Join(Columns, ", "))
			case seen[c]:
				v.bad("ui.columns", "%q is listed twice", c)
			}
			seen[c] = true
		}
	}
	if _, ok := f.lines["export_dir"]; ok && strings.TrimSpace(f.ExportDir) == "" {
		v.bad("export_dir", "must not be empty (leave it out for the current directory)")
	}
}

func (v *validator) colors() {
	c := v.f.Colors
	for _, kv := range []struct {
		key, v string
	}{{"colors.warning", c.Warning}, {"colors.critical", c.Critical}, {"colors.ok", c.OK},
		{"colors.accent", c.Accent}, {"colors.dim", c.Dim}} {
		if err := checkColor(kv.v); err != nil {
			v.bad(kv.key, "%q: %s", kv.v, err)
		}
	}
}

func (v *validator) endpoints(prefix string, eps map[string]Endpoint) {
	for _, name := range sortedKeys(eps) {
		if e := eps[name]; e.RowLimit != nil && *e.RowLimit < 1 {
			v.bad(prefix+quoteKey(name)+".row_limit", "must be a positive number of rows")
		}
	}
}

func (v *validator) contexts() {
	f := v.f
	if f.CurrentContext != "" {
		if _, ok := f.Contexts[f.CurrentContext]; !ok {
			v.bad("current_context", "%q is not a context in this file (%s)", f.CurrentContext, knownContexts(f))
		}
	}
	for _, name := range f.ContextNames() {
		v.context(name, f.Contexts[name])
	}
}

func (v *validator) context(name string, c Context) {
	p := "contexts." + quoteKey(name) + "."
	if name == AllContexts || !contextNameRe.MatchString(name) {
		v.bad("contexts."+quoteKey(name), "a context name is letters, digits, '.', '-' and '_' (and not %q, which means every context)", AllContexts)
	}
	if c.Host == "" && c.Profile == "" {
		v.bad("contexts."+quoteKey(name), "needs host or profile (or both)")
	}
	if c.Host != "" {
		if err := CheckHost(c.Host); err != nil {
			v.bad(p+"host", "%q: %s", c.Host, err)
		}
	}
	for _, w := range c.Warehouses {
		if !warehouseIDRe.MatchString(w) {
			v.bad(p+"warehouses", "%q: a warehouse id is letters, digits, '-' and '_'", w)
		}
	}
	if c.HTTPPath != "" {
		if !strings.HasPrefix(c.HTTPPath, "/") || strings.ContainsAny(c.HTTPPath, "?# \t") {
			v.bad(p+"http_path", "%q: an absolute path without query, fragment or spaces", c.HTTPPath)
		} else if len(c.Warehouses) > 1 {
			v.bad(p+"http_path", "names one warehouse but %d warehouses are listed", len(c.Warehouses))
		}
	}
	if c.Proxy != "" {
		if err := CheckHost(c.Proxy); err != nil {
			v.bad(p+"proxy", "%q: %s", c.Proxy, err)
		}
	}
	for _, spec := range c.Proxies {
		if err := CheckProxySpec(spec); err != nil {
			v.bad(p+"proxies", "%q: %s", spec, err)
		}
	}
	v.dur(p+"refresh", c.Refresh, model.MinRefresh)
	v.dur(p+"inactivity_warn", c.InactivityWarn, model.MinThreshold)
	v.dur(p+"server_idle_timeout", c.ServerIdleTimeout, model.MinThreshold)
	v.dur(p+"leak_after", c.LeakAfter, model.MinThreshold)
	v.endpoints(p+"endpoints.", c.Endpoints)
}

func lineOf(err error) int {
	var ke *KeyError
	if errors.As(err, &ke) {
		return ke.Line
	}
	return 0
}

// CheckHost accepts a workspace URL: http(s)://host[:port] with an
// optional trailing "/", nothing else (the command line's --host rule).
func CheckHost(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" && u.Opaque != "" {
		return errors.New("want http(s)://host[:port], e.g. https://adb-123.4.azuredatabricks.net")
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("scheme %q: want https:// (or http:// for a local simulator)", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return errors.New("no host name: want http(s)://host[:port]")
	case u.User != nil:
		return errors.New("user info is not allowed in the host; pass the token with DATABRICKS_TOKEN")
	case u.Path != "" && u.Path != "/":
		return fmt.Errorf("unexpected path %q: pass only the workspace URL (the warehouse path goes in --http-path)", u.Path)
	case u.RawQuery != "" || u.ForceQuery:
		return errors.New("unexpected query string: pass only the workspace URL")
	case u.Fragment != "":
		return errors.New("unexpected #fragment: pass only the workspace URL")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q is not in 1-65535", p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return errors.New("empty port")
	}
	return nil
}

func checkColor(s string) error {
	if s == "" || colorRe.MatchString(s) {
		return nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= 255 {
		return nil
	}
	return errors.New(`want "#rrggbb" or an ANSI colour number 0-255`)
}

// keyLines maps every dotted key of the document to the line it is set
// on, so that errors found after decoding can still name a line. Tables
// map to the line of their header.
func keyLines(data []byte) (map[string]int, error) {
	s := &keyScanner{lines: map[string]int{}}
	s.p.Reset(data)
	for s.p.NextExpression() {
		if err := s.expression(s.p.Expression()); err != nil {
			return nil, err
		}
	}
	if err := s.p.Error(); err != nil {
		var pe *unstable.ParserError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("line %d: %s", s.p.Shape(s.p.Range(pe.Highlight)).Start.Line, pe.Message)
		}
		return nil, err
	}
	return s.lines, nil
}

// keyScanner records the line of every key while refusing files too big
// or too deep to decode.
type keyScanner struct {
	p       unstable.Parser
	lines   map[string]int
	prefix  []string // the current [table]'s key
	entries int
	tooDeep error
}

func (s *keyScanner) lineOf(n *unstable.Node) int { return s.p.Shape(n.Raw).Start.Line }

// deep refuses a key nested deeper than any dbxtop reads before it is
// joined: joining every prefix of a 16,000-part key costs minutes and
// gigabytes.
func (s *keyScanner) deep(n int, at *unstable.Node) bool {
	if n > MaxKeyDepth && s.tooDeep == nil {
		s.tooDeep = fmt.Errorf("line %d: a key nested %d or more deep; dbxtop's keys are at most %d deep (see docs/configuration.md)",
			s.lineOf(at), n, MaxKeyDepth)
	}
	return s.tooDeep != nil
}

func (s *keyScanner) expression(e *unstable.Node) error {
	if e.Kind == unstable.Table || e.Kind == unstable.ArrayTable || e.Kind == unstable.KeyValue {
		// Decoding grows faster than the file with its tables: a file
		// of thousands is refused before it is decoded.
		if s.entries++; s.entries > MaxEntries {
			line := 0
			if it := e.Key(); it.Next() {
				line = s.lineOf(it.Node())
			}
			return fmt.Errorf("line %d: more than %d tables and keys; a dbxtop config holds a few dozen (see docs/configuration.md)",
				line, MaxEntries)
		}
	}
	switch e.Kind {
	case unstable.Table, unstable.ArrayTable:
		return s.table(e)
	case unstable.KeyValue:
		s.keyValue(s.prefix, e)
		return s.tooDeep
	}
	return nil
}

// table starts a [table] or [[array table]]: its key prefixes the keys
// that follow, and each of its parts is recorded where first seen.
func (s *keyScanner) table(e *unstable.Node) error {
	s.prefix = s.prefix[:0]
	if s.deep(keyParts(e.Key()), e) {
		return s.tooDeep
	}
	it := e.Key()
	for it.Next() {
		s.prefix = append(s.prefix, string(it.Node().Data))
		if _, ok := s.lines[joinKey(s.prefix)]; !ok {
			s.lines[joinKey(s.prefix)] = s.lineOf(it.Node())
		}
	}
	return nil
}

// keyValue records a dotted key and, for an inline table, the keys in it.
func (s *keyScanner) keyValue(prefix []string, kv *unstable.Node) {
	if s.deep(len(prefix)+keyParts(kv.Key()), kv) {
		return
	}
	key := append([]string(nil), prefix...)
	it := kv.Key()
	line := 0
	for it.Next() {
		if line == 0 {
			line = s.lineOf(it.Node())
		}
		key = append(key, string(it.Node().Data))
		s.lines[joinKey(key)] = line
	}
	if v := kv.Value(); v.Kind == unstable.InlineTable {
		ch := v.Children()
		for ch.Next() {
			s.keyValue(key, ch.Node())
		}
	}
}

// MaxKeyDepth bounds how deep a key (its dotted parts, the table header
// it sits under, inline tables) may nest. dbxtop's deepest key is
// contexts.NAME.endpoints.NAME.row_limit; a file far deeper is no config.
const MaxKeyDepth = 16

// MaxEntries bounds the tables and keys a config file may hold: a few
// dozen contexts of a dozen settings each is far below it.
const MaxEntries = 2000

// keyParts counts a key's dotted parts, stopping past MaxKeyDepth.
func keyParts(it unstable.Iterator) int {
	n := 0
	for it.Next() && n <= MaxKeyDepth {
		n++
	}
	return n
}

// joinKey writes a dotted key, quoting parts that need it, the way
// messages and `config show` print keys.
func joinKey(parts []string) string {
	q := make([]string, len(parts))
	for i, s := range parts {
		q[i] = quoteKey(s)
	}
	return strings.Join(q, ".")
}

var bareKeyRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func quoteKey(s string) string {
	if bareKeyRe.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

func joinKeys(list []model.SortKey) string {
	s := make([]string, len(list))
	for i, k := range list {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func knownContexts(f *File) string {
	names := f.ContextNames()
	if len(names) == 0 {
		return "the file defines no context"
	}
	return "contexts: " + strings.Join(names, ", ")
}

// CheckProxySpec checks one proxy of `proxies` or --proxy: an admin URL
// http(s)://host:port, a name to resolve each refresh
// dns+http(s)://name:port, or a Prometheus file_sd file file:///path
// (docs/proxy.md, "Many proxies").
func CheckProxySpec(s string) error {
	switch {
	case strings.HasPrefix(s, "dns+"):
		u, err := url.Parse(strings.TrimPrefix(s, "dns+"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Port() == "" ||
			u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return errors.New("want dns+http(s)://NAME:PORT: every address NAME resolves to, on PORT")
		}
		return nil
	case strings.HasPrefix(s, "file:"):
		// PATH is what follows file://: file:///etc/x.json is absolute.
		if p, ok := strings.CutPrefix(s, "file://"); !ok || strings.TrimSpace(p) == "" {
			return errors.New("want file://PATH of a Prometheus file_sd JSON or YAML file (file:///etc/… for an absolute path)")
		}
		return nil
	}
	return CheckHost(s)
}
