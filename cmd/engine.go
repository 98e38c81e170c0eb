package cmd

import (
	"context"
	"fmt"

	"github.com/dbxtop/dbxtop/config"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources/databricks"
)

// workspaceEngine connects to one workspace (real or simulated) and builds
// its engine (options from conn.engineOptions, shared with snapshot). pol
// carries the caller's policy hooks (serve's counters).
// actionPath is "thrift" when actions go over Thrift (the simulator).
func workspaceEngine(ctx context.Context, ws WorkspaceConfig, simulated bool, logf func(string, ...any), pol retry.PolicyOptions) (eng *poller.Engine, closeConn func(), actionPath string, err error) {
	c, err := connect(ctx, ws, logf)
	if err != nil {
		return nil, nil, "", err
	}
	opts := c.engineOptions(ws, logf)
	opts.Policy = pol
	if simulated && c.thrift != nil && !ws.simStrictHandles && ws.Proxy == "" {
		// A simulator that looks operations up by GUID alone (demo with
		// --check-handle-secrets=false): Thrift actions are exact there
		// and exercise the same path as status. Never to a warehouse that
		// is not running: those go through the Statement Execution API.
		// The demo's default is a strict server, where a rebuilt handle
		// is refused: actions then go as on a real workspace.
		opts.Actions = databricks.GatedActions(c.thrift, c.rest)
		actionPath = "thrift"
	}
	return poller.NewEngine(opts), c.close, actionPath, nil
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
		var pol retry.PolicyOptions
		if hooks != nil {
			pol = hooks(t.label())
		}
		eng, closeConn, ap, err := workspaceEngine(ctx, t.ws, simulated, logf, pol)
		if err != nil {
			closeAll()
			if t.name != "" && len(targets) > 1 {
				return nil, nil, "", fmt.Errorf("context %s: %w", t.name, err)
			}
			return nil, nil, "", err
		}
		closers = append(closers, closeConn)
		members = append(members, poller.Member{Name: t.label(), Engine: eng})
		path = ap
	}
	return poller.NewFleet(ws.Window, members...), closeAll, path, nil
}

type target struct {
	name string // context name, "" without one
	ws   WorkspaceConfig
}

func (t target) label() string {
	if t.name != "" {
		return t.name
	}
	return t.ws.Host
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
	ws.Proxy = s.Proxy
	ws.RowLimits = f.RowLimits(s.Context)
}
