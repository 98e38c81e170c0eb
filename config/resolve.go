package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Built-in defaults (the last word when neither a flag nor the file
// speaks).
const (
	DefaultView = "operations"
	DefaultSort = string(model.SortSeverity)
)

// Overrides are the flags the operator gave explicitly; nil (or a nil
// slice) means "not given", so the file or the default applies.
type Overrides struct {
	Host, Profile, HTTPPath, ExportDir *string
	Warehouses                         []string
	// Proxies are the --proxy values (repeatable).
	Proxies                           []string
	Refresh, Window                   *time.Duration
	InactivityWarn, ServerIdleTimeout *time.Duration
	LeakAfter                         *time.Duration
}

// Settings are the effective settings of one workspace.
type Settings struct {
	Context    string // "" when no context was chosen
	Host       string
	Profile    string
	HTTPPath   string
	Warehouses []string
	// Proxies are the dbxtop proxies to read: admin URLs or discovery
	// specs (the context's proxy, then its proxies, or every --proxy).
	Proxies    []string
	Refresh    time.Duration
	Window     time.Duration
	Thresholds model.Thresholds
	View       string
	Sort       string
	Columns    []string
	ExportDir  string // "" → the current directory
	Colors     Colors
	// Origins says where each setting came from ("flag --refresh",
	// "file line 7 (contexts.prod.refresh)", "default"), for `config show`.
	Origins map[string]string
}

// Setting names, in the order `config show` prints them.
var SettingNames = []string{"context", "host", "profile", "http_path", "warehouses", "proxy", "refresh", "window",
	"inactivity_warn", "server_idle_timeout", "leak_after", "ui.view", "ui.sort", "ui.columns", "export_dir",
	"colors.warning", "colors.critical", "colors.ok", "colors.accent", "colors.dim"}

// Select turns --context values into context names: none → the file's
// current_context (or no context at all); "all" → every context.
func (f *File) Select(names []string) ([]string, error) {
	if len(names) == 0 {
		if f.CurrentContext != "" {
			return []string{f.CurrentContext}, nil
		}
		return []string{""}, nil
	}
	var out []string
	for _, n := range names {
		if n == AllContexts {
			if len(f.Contexts) == 0 {
				return nil, fmt.Errorf("--context all: %s", f.noContexts())
			}
			for _, c := range f.ContextNames() {
				if !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
			continue
		}
		if _, ok := f.Contexts[n]; !ok {
			if len(f.Contexts) == 0 {
				return nil, fmt.Errorf("unknown context %q: %s", n, f.noContexts())
			}
			return nil, fmt.Errorf("unknown context %q (%s)", n, knownContexts(f))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (f *File) noContexts() string {
	if f.path == "" {
		return "there is no config file (see `dbxtop config path`)"
	}
	return "the config file " + f.path + " defines no [contexts.NAME]"
}

// Resolve returns the effective settings of each selected context
// (Select's rules): flags over the context, the context over the file's
// top level, the file over defaults. Flags that name one workspace
// (--host, --profile, --http-path, --proxy, -w) are refused with several
// contexts: which one would they mean?
func (f *File) Resolve(contexts []string, ov Overrides) ([]Settings, error) {
	names, err := f.Select(contexts)
	if err != nil {
		return nil, err
	}
	if len(names) > 1 {
		for flag, set := range map[string]bool{"--host": ov.Host != nil, "--profile": ov.Profile != nil,
			"--http-path": ov.HTTPPath != nil, "--proxy": ov.Proxies != nil, "--warehouse": ov.Warehouses != nil} {
			if set {
				return nil, fmt.Errorf("%s names one workspace but %d contexts are selected (%s): set it in each context of the config file instead",
					flag, len(names), strings.Join(names, ", "))
			}
		}
	}
	out := make([]Settings, 0, len(names))
	for _, n := range names {
		out = append(out, f.resolveOne(n, ov))
	}
	return out, nil
}

func (f *File) resolveOne(name string, ov Overrides) Settings {
	s := Settings{Context: name, Origins: map[string]string{}}
	var c Context
	if name != "" {
		c = f.Contexts[name]
		s.Origins["context"] = f.origin("contexts." + quoteKey(name))
	} else {
		s.Origins["context"] = "none"
	}
	cp := "contexts." + quoteKey(name) + "."
	str := func(key string, dst *string, flag *string, flagName, ctxVal, ctxKey, fileVal, fileKey, def string) {
		switch {
		case flag != nil:
			*dst, s.Origins[key] = *flag, "flag "+flagName
		case ctxVal != "":
			*dst, s.Origins[key] = ctxVal, f.origin(ctxKey)
		case fileVal != "":
			*dst, s.Origins[key] = fileVal, f.origin(fileKey)
		default:
			*dst, s.Origins[key] = def, "default"
		}
	}
	dur := func(key string, dst *time.Duration, flag *time.Duration, flagName string, ctxVal *Duration, ctxKey string, fileVal *Duration, fileKey string, def time.Duration) {
		switch {
		case flag != nil:
			*dst, s.Origins[key] = *flag, "flag "+flagName
		case ctxVal != nil:
			*dst, s.Origins[key] = ctxVal.Duration, f.origin(ctxKey)
		case fileVal != nil:
			*dst, s.Origins[key] = fileVal.Duration, f.origin(fileKey)
		default:
			*dst, s.Origins[key] = def, "default"
		}
	}
	str("host", &s.Host, ov.Host, "--host", c.Host, cp+"host", "", "", "")
	str("profile", &s.Profile, ov.Profile, "--profile", c.Profile, cp+"profile", "", "", "")
	str("http_path", &s.HTTPPath, ov.HTTPPath, "--http-path", c.HTTPPath, cp+"http_path", "", "", "")
	s.Proxies, s.Origins["proxy"] = f.proxies(c, cp, ov.Proxies)
	switch {
	case ov.Warehouses != nil:
		s.Warehouses, s.Origins["warehouses"] = slices.Clone(ov.Warehouses), "flag --warehouse"
	case c.Warehouses != nil:
		s.Warehouses, s.Origins["warehouses"] = slices.Clone(c.Warehouses), f.origin(cp+"warehouses")
	default:
		s.Origins["warehouses"] = "default"
	}
	none := (*Duration)(nil)
	dur("refresh", &s.Refresh, ov.Refresh, "--refresh", c.Refresh, cp+"refresh", f.Refresh, "refresh", model.DefaultRefresh)
	dur("window", &s.Window, ov.Window, "--window", none, "", f.Window, "window", model.DefaultWindow)
	th, def := &s.Thresholds, model.DefaultThresholds
	dur("inactivity_warn", &th.InactivityWarn, ov.InactivityWarn, "--inactivity-warn",
		c.InactivityWarn, cp+"inactivity_warn", f.Thresholds.InactivityWarn, "thresholds.inactivity_warn", def.InactivityWarn)
	dur("server_idle_timeout", &th.ServerIdleTimeout, ov.ServerIdleTimeout, "--server-idle-timeout",
		c.ServerIdleTimeout, cp+"server_idle_timeout", f.Thresholds.ServerIdleTimeout, "thresholds.server_idle_timeout", def.ServerIdleTimeout)
	dur("leak_after", &th.LeakAfter, ov.LeakAfter, "--leak-after",
		c.LeakAfter, cp+"leak_after", f.Thresholds.LeakAfter, "thresholds.leak_after", def.LeakAfter)
	// A flag only (--server-leak-timeout), not a config key: the default until cmd sets it.
	th.ServerLeakTimeout = def.ServerLeakTimeout
	str("ui.view", &s.View, nil, "", "", "", f.UI.View, "ui.view", DefaultView)
	str("ui.sort", &s.Sort, nil, "", "", "", f.UI.Sort, "ui.sort", DefaultSort)
	if f.UI.Columns != nil {
		s.Columns, s.Origins["ui.columns"] = slices.Clone(f.UI.Columns), f.origin("ui.columns")
	} else {
		s.Columns, s.Origins["ui.columns"] = slices.Clone(DefaultColumns), "default"
	}
	str("export_dir", &s.ExportDir, ov.ExportDir, "--export-dir", "", "", expandHome(f.ExportDir), "export_dir", "")
	str("colors.warning", &s.Colors.Warning, nil, "", "", "", f.Colors.Warning, "colors.warning", "")
	str("colors.critical", &s.Colors.Critical, nil, "", "", "", f.Colors.Critical, "colors.critical", "")
	str("colors.ok", &s.Colors.OK, nil, "", "", "", f.Colors.OK, "colors.ok", "")
	str("colors.accent", &s.Colors.Accent, nil, "", "", "", f.Colors.Accent, "colors.accent", "")
	str("colors.dim", &s.Colors.Dim, nil, "", "", "", f.Colors.Dim, "colors.dim", "")
	return s
}

// proxies are the context's proxy then its proxies, unless --proxy was
// given (it replaces both), and where they came from.
func (f *File) proxies(c Context, cp string, flag []string) ([]string, string) {
	switch {
	case flag != nil:
		return slices.Clone(flag), "flag --proxy"
	case c.Proxy != "" || len(c.Proxies) > 0:
		var out []string
		if c.Proxy != "" {
			out = append(out, c.Proxy)
		}
		out = append(out, c.Proxies...)
		key := cp + "proxy"
		if c.Proxy == "" {
			key = cp + "proxies"
		}
		return out, f.origin(key)
	}
	return nil, "default"
}

func (f *File) origin(key string) string {
	if l := f.lines[key]; l > 0 {
		return fmt.Sprintf("file line %d (%s)", l, key)
	}
	return "file (" + key + ")"
}

// expandHome turns a leading "~/" into the home directory, as a shell
// would; the file is not run through a shell.
func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// Value formats one setting for `config show`.
func (s Settings) Value(name string) string {
	switch name {
	case "context":
		return s.Context
	case "host":
		return s.Host
	case "profile":
		return s.Profile
	case "http_path":
		return s.HTTPPath
	case "warehouses":
		if len(s.Warehouses) == 0 {
			return "(every visible warehouse)"
		}
		return strings.Join(s.Warehouses, ",")
	case "proxy":
		return strings.Join(s.Proxies, ",")
	case "refresh":
		return s.Refresh.String()
	case "window":
		return s.Window.String()
	case "inactivity_warn":
		return s.Thresholds.InactivityWarn.String()
	case "server_idle_timeout":
		return s.Thresholds.ServerIdleTimeout.String()
	case "leak_after":
		return s.Thresholds.LeakAfter.String()
	case "ui.view":
		return s.View
	case "ui.sort":
		return s.Sort
	case "ui.columns":
		return strings.Join(s.Columns, ",")
	case "export_dir":
		if s.ExportDir == "" {
			return "(current directory)"
		}
		return s.ExportDir
	case "colors.warning":
		return s.Colors.Warning
	case "colors.critical":
		return s.Colors.Critical
	case "colors.ok":
		return s.Colors.OK
	case "colors.accent":
		return s.Colors.Accent
	case "colors.dim":
		return s.Colors.Dim
	}
	return ""
}
