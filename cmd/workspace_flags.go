package cmd

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/capstore"
	"github.com/dbxtop/dbxtop/config"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
	"github.com/spf13/pflag"
)

// flagUse says which commands a workspace flag belongs to, so that each
// command's --help lists only the flags it acts on.
type flagUse uint8

const (
	// useToken: --token is the workspace's (false for demo, whose --token
	// is the simulator's).
	useToken flagUse = 1 << iota
	// useTUI: the terminal flags (--mouse, --export-dir).
	useTUI
	// useRender: --ascii and --no-color (the TUI and snapshot's table).
	useRender
	// useActions: --read-only (commands that can close or cancel).
	useActions
)

// The flag sets of each command that watches a workspace.
const (
	flagsTUI      = useToken | useTUI | useRender | useActions
	flagsDemo     = useTUI | useRender | useActions
	flagsSnapshot = useToken | useRender
	flagsServe    = useToken | useActions
)

// addWorkspaceFlags registers the workspace flags of docs/configuration.md on fs,
// writing into cfg (which gets the defaults); use picks the flags the
// command acts on.
func addWorkspaceFlags(fs *pflag.FlagSet, cfg *WorkspaceConfig, use flagUse) {
	withToken := use&useToken != 0
	fs.StringVarP(&cfg.Profile, "profile", "p", "", "~/.databrickscfg profile to authenticate with (env DATABRICKS_CONFIG_PROFILE)")
	fs.Var(&checkedString{p: &cfg.Host, typ: "url", check: checkHost}, "host",
		"workspace URL, https://host[:port] (env DATABRICKS_HOST; http://127.0.0.1:PORT for the simulator)")
	if withToken {
		fs.Var(&checkedString{p: &cfg.Token, typ: "token", check: nonEmpty("the token"), hide: true}, "token",
			"personal access token; prefer env DATABRICKS_TOKEN: a flag is visible in the process list")
	}
	fs.VarP(&warehouseIDs{p: &cfg.Warehouses}, "warehouse", "w",
		"SQL warehouse id to watch; repeat or comma-separate for several (default: every warehouse visible)")
	fs.Var(&checkedString{p: &cfg.HTTPPath, typ: "path", check: checkHTTPPath}, "http-path",
		"Thrift HTTP path of the warehouse (default /sql/1.0/warehouses/<id>)")
	fs.Var(newDuration(&cfg.Refresh, model.DefaultRefresh, model.MinRefresh), "refresh", "how often to refresh the operation list and endpoints")
	th := &cfg.Thresholds
	fs.Var(newDuration(&th.InactivityWarn, model.DefaultThresholds.InactivityWarn, model.MinThreshold), "inactivity-warn",
		"flag INACTIVE / STALE after this long without client activity / a successful poll")
	fs.Var(newDuration(&th.ServerIdleTimeout, model.DefaultThresholds.ServerIdleTimeout, model.MinThreshold), "server-idle-timeout",
		"the server's inactivity reaper to count down to; flags turn critical at 80% of it")
	fs.Var(newDuration(&th.LeakAfter, model.DefaultThresholds.LeakAfter, model.MinThreshold), "leak-after",
		"flag UNCLOSED when a finished operation stays open this long (critical after 5x)")
	fs.Var(newDuration(&th.ServerLeakTimeout, model.DefaultThresholds.ServerLeakTimeout, model.MinThreshold), "server-leak-timeout",
		"the server's reaper of ended operations nobody closed: a proxy's proof that one is open holds this long\n"+
			"after the later of its end and its client's last call")
	if use&useActions != 0 {
		fs.BoolVar(&cfg.ReadOnly, "read-only", false, "refuse every close and cancel, whoever asks")
	}
	if use&useRender != 0 {
		fs.BoolVar(&cfg.NoColor, "no-color", false, "no colours (also env NO_COLOR)")
		fs.BoolVar(&cfg.ASCII, "ascii", false, "ASCII-only borders, bars and symbols")
	}
	// No back-quotes in this usage: pflag would read them as the
	// argument's placeholder name.
	fs.Var(&proxySpecs{p: &cfg.Proxies}, "proxy",
		"admin URL of a dbxtop proxy the clients go through (token in env DBXTOP_PROXY_TOKEN): adds INACTIVE from the\n"+
			"client's last call, CLOSE_FAILED for a client's own failed close, operations only the proxy saw; repeat for\n"+
			"several, or discover them: dns+http://NAME:PORT (every address, each refresh), file:///PATH (Prometheus file_sd)")
	fs.Var(&checkedString{p: &cfg.DNSServer, typ: "addr", check: checkDNSServer}, "dns-server",
		"for tests: the only DNS server (IP:PORT) the dns+ --proxy specs ask")
	_ = fs.MarkHidden("dns-server")
	if use&useTUI != 0 {
		fs.BoolVar(&cfg.Mouse, "mouse", false, "wheel scrolls, click selects (off: terminal text selection keeps working)")
	}
	fs.Var(newDuration(&cfg.AuthTimeout, defaultAuthTimeout, time.Second), "auth-timeout",
		"give up resolving the workspace's credentials (token, profile, OAuth, CLIs) after this long, naming what to set")
	fs.Var(&checkedString{p: &cfg.LogFile, typ: "path", check: checkLogFile}, "log-file",
		"append a log of retries, give-ups and actions to this file (never the token)")
	addConfigFlag(fs, &cfg.ConfigPath)
	fs.StringArrayVar(&cfg.Contexts, "context", nil, "workspace context `name` from the config file; repeat for several, or 'all'")
	if use&useTUI != 0 {
		fs.Var(&checkedString{p: &cfg.ExportDir, typ: "dir", check: nonEmpty("the export directory")}, "export-dir",
			"where the export (e) writes (default: export_dir in the config file, else the current directory)")
	}
	fs.Var(newDuration(&cfg.Window, model.DefaultWindow, model.MinWindow), "window",
		"how far back the Clients view and clients[] aggregate")
}

func addConfigFlag(fs *pflag.FlagSet, p *string) {
	fs.Var(&checkedString{p: p, typ: "path", check: nonEmpty("the config path")}, "config",
		"config file (default $XDG_CONFIG_HOME/dbxtop/config.toml, else ~/.config/dbxtop/config.toml)")
}

// loadConfig reads --config (which must exist) or the default file (which
// need not). Errors name the file, key and line.
// A file others may write gets its one warning line on stderr.
func (a *app) loadConfig(path string) (*config.File, error) {
	optional := path == ""
	if optional {
		p, err := config.Path(a.getenv)
		if err != nil {
			return nil, err
		}
		path = p
	}
	f, err := config.Load(path, optional)
	if err == nil && f.Warning() != "" {
		fmt.Fprintln(a.stderr, textfmt.Line(f.Warning()))
	}
	return f, err
}

// resolveConfig applies the config file under the flags: flags win, then
// the selected context, then the file's top level, then defaults.
func (a *app) resolveConfig(fs *pflag.FlagSet, cfg *WorkspaceConfig) error {
	f, err := a.loadConfig(cfg.ConfigPath)
	if err != nil {
		return usagef("%s", err)
	}
	var ov config.Overrides
	str := func(name string, v string) *string {
		if fs.Changed(name) {
			return &v
		}
		return nil
	}
	dur := func(name string, v time.Duration) *time.Duration {
		if fs.Changed(name) {
			return &v
		}
		return nil
	}
	ov.Host, ov.Profile, ov.HTTPPath = str("host", cfg.Host), str("profile", cfg.Profile), str("http-path", cfg.HTTPPath)
	ov.ExportDir = str("export-dir", cfg.ExportDir)
	if fs.Changed("proxy") {
		ov.Proxies = cfg.Proxies
	}
	if fs.Changed("warehouse") {
		ov.Warehouses = cfg.Warehouses
	}
	ov.Refresh, ov.Window = dur("refresh", cfg.Refresh), dur("window", cfg.Window)
	ov.InactivityWarn = dur("inactivity-warn", cfg.Thresholds.InactivityWarn)
	ov.ServerIdleTimeout = dur("server-idle-timeout", cfg.Thresholds.ServerIdleTimeout)
	ov.LeakAfter = dur("leak-after", cfg.Thresholds.LeakAfter)
	rs, err := f.Resolve(cfg.Contexts, ov)
	if err != nil {
		return usagef("%s", err)
	}
	cfg.Resolved, cfg.configFile = rs, f
	cfg.apply(rs[0], f)
	return nil
}

// finishWorkspace applies the environment and cross-flag rules once the
// flags are parsed. It may print warnings on stderr; it never echoes the
// token. simulated is true for demo, whose workspace (and token) is the
// embedded simulator's: a real token from the environment stays unused.
func (a *app) finishWorkspace(fs *pflag.FlagSet, cfg *WorkspaceConfig, simulated bool) error {
	if fs.Changed("http-path") && len(cfg.Warehouses) > 1 {
		return invalidFlag("http-path", cfg.HTTPPath,
			fmt.Sprintf("names one warehouse but %d --warehouse ids were given", len(cfg.Warehouses)))
	}
	cfg.statePath, cfg.statePathErr = capstore.DefaultPath(a.getenv)
	switch {
	case simulated:
	case fs.Changed("token"):
		fmt.Fprintln(a.stderr, "dbxtop: warning: --token is visible to other users in the process list; set DATABRICKS_TOKEN instead")
	default:
		if tok, ok := a.getenv("DATABRICKS_TOKEN"); ok {
			cfg.Token = strings.TrimSpace(tok)
		}
	}
	// The SDK reads DATABRICKS_HOST itself; check it here so that a bad
	// value gets the same one-line refusal as a bad --host instead of an
	// SDK warning and a failed request to a mangled URL.
	if h, ok := a.getenv("DATABRICKS_HOST"); ok && h != "" && !simulated && !fs.Changed("host") {
		if err := checkHost(h); err != nil {
			return usagef("invalid DATABRICKS_HOST %q: %s", h, err)
		}
	}
	if v, ok := a.getenv("NO_COLOR"); ok && v != "" {
		cfg.NoColor = true
	}
	if simulated {
		// demo's workspace is its own simulator: contexts make no sense.
		for _, name := range []string{"context", "config"} {
			if fs.Changed(name) {
				return invalidFlag(name, fs.Lookup(name).Value.String(), "demo watches its embedded simulator; use contexts with dbxtop, snapshot or serve")
			}
		}
		return nil
	}
	if err := a.resolveConfig(fs, cfg); err != nil {
		return err
	}
	return a.proxyToken(cfg)
}

// proxyToken reads the proxy's admin token when a proxy is set (by
// --proxy or the config file's `proxy`); it is never a flag or a file key:
// DBXTOP_PROXY_TOKEN holds it, or DBXTOP_PROXY_TOKEN_FILE names the file
// that does (a systemd credential: contrib/systemd/dbxtop-serve.service).
func (a *app) proxyToken(cfg *WorkspaceConfig) error {
	set := len(cfg.Proxies) > 0
	for _, s := range cfg.Resolved {
		set = set || len(s.Proxies) > 0
	}
	if !set {
		return nil
	}
	if p, ok := a.getenv("DBXTOP_PROXY_TOKEN_FILE"); ok && p != "" {
		tok, warn, err := readTokenFile(p, "DBXTOP_PROXY_TOKEN_FILE")
		if err != nil {
			return usagef("%s", err.Error())
		}
		if warn != "" {
			fmt.Fprintln(a.stderr, "dbxtop: warning: "+warn)
		}
		cfg.ProxyToken = tok
		return nil
	}
	tok, ok := a.getenv("DBXTOP_PROXY_TOKEN")
	if !ok || strings.TrimSpace(tok) == "" {
		if onlyFileSD(cfg) {
			// Each target names its token file (__dbxtop_token_file__);
			// one that does not is shown down with why.
			return nil
		}
		return usagef("--proxy needs the proxy's admin token in DBXTOP_PROXY_TOKEN (the admin_token=… of its first line)")
	}
	cfg.ProxyToken = strings.TrimSpace(tok)
	return nil
}

// onlyFileSD: every proxy spec is a file_sd file, whose targets may each
// name their token file.
func onlyFileSD(cfg *WorkspaceConfig) bool {
	specs := slices.Clone(cfg.Proxies)
	for _, s := range cfg.Resolved {
		specs = append(specs, s.Proxies...)
	}
	for _, s := range specs {
		if !strings.HasPrefix(s, "file:") {
			return false
		}
	}
	return len(specs) > 0
}
