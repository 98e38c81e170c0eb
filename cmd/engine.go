package cmd

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/dbxtop/dbxtop/config"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources/databricks"
)

// workspaceEngine connects to one workspace (real or simulated) and builds
// its engine (options from conn.engineOptions, shared with snapshot), with
// the workspace's label (target.label, from the resolved host). hooks
// gives the caller's policy hooks for that label (serve's counters).
// actionPath is "thrift" when actions go over Thrift (the simulator).
func workspaceEngine(ctx context.Context, t target, simulated bool, logf func(string, ...any), hooks func(name string) retry.PolicyOptions) (eng *poller.Engine, closeConn func(), actionPath, label string, err error) {
	ws := t.ws
	c, err := connect(ctx, ws, logf)
	if err != nil {
		return nil, nil, "", "", err
	}
	label = t.label(c.rest.Host())
	opts := c.engineOptions(ws, logf)
	if hooks != nil {
		opts.Policy = hooks(label)
	}
	if simulated && c.thrift != nil && !ws.simStrictHandles && len(ws.Proxies) == 0 {
		// A simulator that looks operations up by GUID alone (demo with
		// --check-handle-secrets=false): Thrift actions are exact there
		// and exercise the same path as status. Never to a warehouse that
		// is not running: those go through the Statement Execution API.
		// The demo's default is a strict server, where a rebuilt handle
		// is refused: actions then go as on a real workspace.
		opts.Actions = databricks.GatedActions(c.thrift, c.rest)
		actionPath = "thrift"
	}
	return poller.NewEngine(opts), c.close, actionPath, label, nil
}

// fleetOf builds one engine per selected workspace (ws.Contexts resolved
// by finishWorkspace); a single workspace is a fleet of one. A workspace
// whose connection cannot even be configured fails the command: it is a
// configuration error, not an outage.
func fleetOf(ctx context.Context, ws WorkspaceConfig, simulated bool, logf func(string, ...any), hooks func(name string) retry.PolicyOptions) (*poller.Fleet, func(), string, error) {
	targets := ws.targets()
	var members []poller.Member
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	path := ""
	for _, t := range targets {
		eng, closeConn, ap, label, err := workspaceEngine(ctx, t, simulated, logf, hooks)
		if err != nil {
			closeAll()
			if t.name != "" && len(targets) > 1 {
				return nil, nil, "", fmt.Errorf("context %s: %w", t.name, err)
			}
			return nil, nil, "", err
		}
		closers = append(closers, closeConn)
		members = append(members, poller.Member{Name: label, Engine: eng})
		path = ap
	}
	return poller.NewFleet(ws.Window, members...), closeAll, path, nil
}

type target struct {
	name string // context name, "" without one
	ws   WorkspaceConfig
}

// label names the workspace in metrics, alerts, events and summaries:
// the context's name, else the host's name (from the resolved URL, so a
// host that came from a profile or the environment counts too). It is
// never empty: alerts group by it.
func (t target) label(resolvedHost string) string {
	if t.name != "" {
		return t.name
	}
	for _, h := range []string{resolvedHost, t.ws.Host} {
		if n := hostName(h); n != "" {
			return n
		}
	}
	return "default"
}

// hostName is a workspace URL's host[:port] ("" when it has none).
func hostName(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return ""
	}
	if !strings.Contains(u, "://") {
		u = "https://" + u
	}
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// targets is one WorkspaceConfig per selected context, each with that
// context's resolved settings; without contexts, ws itself.
func (ws WorkspaceConfig) targets() []target {
	if len(ws.Resolved) <= 1 {
		name := ""
		if len(ws.Resolved) == 1 {
			name = ws.Resolved[0].Context
		}
		return []target{{name: name, ws: ws}}
	}
	out := make([]target, 0, len(ws.Resolved))
	for _, s := range ws.Resolved {
		w := ws
		w.apply(s, ws.configFile)
		// Each context authenticates through its own profile: one token
		// from the environment cannot belong to several workspaces.
		w.Token = ""
		w.Resolved = nil
		out = append(out, target{name: s.Context, ws: w})
	}
	return out
}

// apply copies resolved settings into the flat fields the rest of cmd uses.
func (ws *WorkspaceConfig) apply(s config.Settings, f *config.File) {
	ws.Host, ws.Profile, ws.HTTPPath = s.Host, s.Profile, s.HTTPPath
	ws.Warehouses = s.Warehouses
	leak := ws.Thresholds.ServerLeakTimeout // a flag only, not in the config file
	ws.Refresh, ws.Window, ws.Thresholds = s.Refresh, s.Window, s.Thresholds
	ws.Thresholds.ServerLeakTimeout = leak
	ws.ExportDir = s.ExportDir
	ws.Proxies = s.Proxies
	ws.RowLimits = f.RowLimits(s.Context)
}
