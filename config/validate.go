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
var Views = []string{"operations", "endpoints", "events", "clients"}

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

func (f *File) validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Line: f.lines[key], Msg: fmt.Sprintf(format, args...)})
	}
	dur := func(key string, d *Duration, min time.Duration) {
		if d != nil && d.Duration < min {
			bad(key, "must be at least %s", min)
		}
	}
	dur("refresh", f.Refresh, model.MinRefresh)
	if f.Window != nil && (f.Window.Duration < model.MinWindow || f.Window.Duration > model.MaxWindow) {
		bad("window", "must be between %s and %s", model.MinWindow, model.MaxWindow)
	}
	dur("thresholds.inactivity_warn", f.Thresholds.InactivityWarn, model.MinThreshold)
	dur("thresholds.server_idle_timeout", f.Thresholds.ServerIdleTimeout, model.MinThreshold)
	dur("thresholds.leak_after", f.Thresholds.LeakAfter, model.MinThreshold)
	if v := f.UI.View; v != "" && !slices.Contains(Views, v) {
		bad("ui.view", "%q: must be one of %s", v, strings.Join(Views, ", "))
	}
	if s := f.UI.Sort; s != "" && !slices.Contains(model.SortKeys, model.SortKey(s)) {
		bad("ui.sort", "%q: must be one of %s", s, joinKeys(model.SortKeys))
	}
	if f.UI.Columns != nil {
		if len(f.UI.Columns) == 0 {
			bad("ui.columns", "must name at least one column")
		}
		seen := map[string]bool{}
		for _, c := range f.UI.Columns {
			switch {
			case !slices.Contains(Columns, c):
				bad("ui.columns", "%q: must be one of %s", c, strings.Join(Columns, ", "))
			case seen[c]:
				bad("ui.columns", "%q is listed twice", c)
			}
			seen[c] = true
		}
	}
	if _, ok := f.lines["export_dir"]; ok && strings.TrimSpace(f.ExportDir) == "" {
		bad("export_dir", "must not be empty (leave it out for the current directory)")
	}
	for _, c := range []struct {
		key, v string
	}{{"colors.warning", f.Colors.Warning}, {"colors.critical", f.Colors.Critical}, {"colors.ok", f.Colors.OK},
		{"colors.accent", f.Colors.Accent}, {"colors.dim", f.Colors.Dim}} {
		if err := checkColor(c.v); err != nil {
			bad(c.key, "%q: %s", c.v, err)
		}
	}
	endpoints := func(prefix string, eps map[string]Endpoint) {
		for _, name := range sortedKeys(eps) {
			if e := eps[name]; e.RowLimit != nil && *e.RowLimit < 1 {
				bad(prefix+quoteKey(name)+".row_limit", "must be a positive number of rows")
			}
		}
	}
	endpoints("endpoints.", f.Endpoints)
	if f.CurrentContext != "" {
		if _, ok := f.Contexts[f.CurrentContext]; !ok {
			bad("current_context", "%q is not a context in this file (%s)", f.CurrentContext, knownContexts(f))
		}
	}
	for _, name := range f.ContextNames() {
		c := f.Contexts[name]
		p := "contexts." + quoteKey(name) + "."
		if name == AllContexts || !contextNameRe.MatchString(name) {
			bad("contexts."+quoteKey(name), "a context name is letters, digits, '.', '-' and '_' (and not %q, which means every context)", AllContexts)
		}
		if c.Host == "" && c.Profile == "" {
			bad("contexts."+quoteKey(name), "needs host or profile (or both)")
		}
		if c.Host != "" {
			if err := CheckHost(c.Host); err != nil {
				bad(p+"host", "%q: %s", c.Host, err)
			}
		}
		for _, w := range c.Warehouses {
			if !warehouseIDRe.MatchString(w) {
				bad(p+"warehouses", "%q: a warehouse id is letters, digits, '-' and '_'", w)
			}
		}
		if c.HTTPPath != "" {
			if !strings.HasPrefix(c.HTTPPath, "/") || strings.ContainsAny(c.HTTPPath, "?# \t") {
				bad(p+"http_path", "%q: an absolute path without query, fragment or spaces", c.HTTPPath)
			} else if len(c.Warehouses) > 1 {
				bad(p+"http_path", "names one warehouse but %d warehouses are listed", len(c.Warehouses))
			}
		}
		if c.Proxy != "" {
			if err := CheckHost(c.Proxy); err != nil {
				bad(p+"proxy", "%q: %s", c.Proxy, err)
			}
		}
		dur(p+"refresh", c.Refresh, model.MinRefresh)
		dur(p+"inactivity_warn", c.InactivityWarn, model.MinThreshold)
		dur(p+"server_idle_timeout", c.ServerIdleTimeout, model.MinThreshold)
		dur(p+"leak_after", c.LeakAfter, model.MinThreshold)
		endpoints(p+"endpoints.", c.Endpoints)
	}
	sort.SliceStable(errs, func(i, j int) bool { return lineOf(errs[i]) < lineOf(errs[j]) })
	return errors.Join(errs...)
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
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	var prefix []string
	lineOfNode := func(n *unstable.Node) int { return p.Shape(n.Raw).Start.Line }
	var tooDeep error
	// deep refuses a key nested deeper than any dbxtop reads before it is
	// joined: joining every prefix of a 16,000-part key costs minutes and
	// gigabytes.
	deep := func(n int, at *unstable.Node) bool {
		if n > MaxKeyDepth && tooDeep == nil {
			tooDeep = fmt.Errorf("line %d: a key nested %d or more deep; dbxtop's keys are at most %d deep (see docs/configuration.md)",
				lineOfNode(at), n, MaxKeyDepth)
		}
		return tooDeep != nil
	}
	var walkKV func(prefix []string, kv *unstable.Node)
	walkKV = func(prefix []string, kv *unstable.Node) {
		if deep(len(prefix)+keyParts(kv.Key()), kv) {
			return
		}
		key := append([]string(nil), prefix...)
		it := kv.Key()
		line := 0
		for it.Next() {
			if line == 0 {
				line = lineOfNode(it.Node())
			}
			key = append(key, string(it.Node().Data))
			lines[joinKey(key)] = line
		}
		if v := kv.Value(); v.Kind == unstable.InlineTable {
			ch := v.Children()
			for ch.Next() {
				walkKV(key, ch.Node())
			}
		}
	}
	entries := 0
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind == unstable.Table || e.Kind == unstable.ArrayTable || e.Kind == unstable.KeyValue {
			// Decoding grows faster than the file with its tables: a file
			// of thousands is refused before it is decoded.
			if entries++; entries > MaxEntries {
				line := 0
				if it := e.Key(); it.Next() {
					line = lineOfNode(it.Node())
				}
				return nil, fmt.Errorf("line %d: more than %d tables and keys; a dbxtop config holds a few dozen (see docs/configuration.md)",
					line, MaxEntries)
			}
		}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			prefix = prefix[:0]
			if deep(keyParts(e.Key()), e) {
				return nil, tooDeep
			}
			it := e.Key()
			for it.Next() {
				prefix = append(prefix, string(it.Node().Data))
				if _, ok := lines[joinKey(prefix)]; !ok {
					lines[joinKey(prefix)] = lineOfNode(it.Node())
				}
			}
		case unstable.KeyValue:
			walkKV(prefix, e)
			if tooDeep != nil {
				return nil, tooDeep
			}
		}
	}
	if err := p.Error(); err != nil {
		var pe *unstable.ParserError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("line %d: %s", p.Shape(p.Range(pe.Highlight)).Start.Line, pe.Message)
		}
		return nil, err
	}
	return lines, nil
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
