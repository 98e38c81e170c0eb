package cmd

import (
	"context"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// conn is one workspace's sources, ready to hand to the engine: the REST
// client (discovery, capacity, Statement Execution API) and, where it can
// be built, the Thrift client (status with client activity).
type conn struct {
	rest   *databricks.Client
	thrift *thrift.Client // nil when Thrift is unavailable
	status sources.StatusSource
	idle   []sources.IdleCloser
	// disc and actions are discovery and close/cancel: the REST client,
	// or with --proxy the proxy's facts merged in (proxy.Merge).
	disc    sources.Discoverer
	actions sources.ActionSource
	// capacity lists Vector Search endpoints: the REST client, or with
	// --proxy the refusals the proxy saw merged in (proxy.MergeCapacity).
	capacity sources.CapacitySource
}

// authCheckTimeout bounds connect's auth resolution (an OAuth token
// request, a CLI): past it the first call reports what is wrong.
const authCheckTimeout = 30 * time.Second

// connect resolves the workspace's auth and builds its sources. It makes
// no request to the workspace itself (auth may ask a token endpoint or a
// CLI, as the first call would).
func connect(ctx context.Context, ws WorkspaceConfig, logf func(string, ...any)) (c *conn, err error) {
	ua := "dbxtop/" + Version
	rest, err := databricks.New(ctx, databricks.Config{
		Profile:    ws.Profile,
		Host:       ws.Host,
		Token:      ws.Token,
		Warehouses: ws.Warehouses,
		UserAgent:  ua,
	})
	if err != nil {
		return nil, err
	}
	// No host or no credentials at all: stop here, in one line, rather
	// than follow a workspace that can never answer.
	cctx, cancel := context.WithTimeout(ctx, authCheckTimeout)
	defer cancel()
	if err := rest.CheckWorkspace(cctx); err != nil {
		return nil, err
	}
	c = &conn{rest: rest, status: rest, idle: []sources.IdleCloser{rest}, disc: rest, actions: rest, capacity: rest}
	defer func() {
		if ws.Proxy != "" && err == nil {
			err = c.withProxy(ws, ua)
		}
	}()
	// Thrift reports the owning client's last activity (INACTIVE needs it);
	// the Statement Execution API answers when Thrift cannot.
	tc, terr := thrift.NewClient(thrift.Options{
		Host:         rest.Host(),
		HTTPPath:     httpPathFunc(ws.HTTPPath),
		Authenticate: rest.Authenticate,
		UserAgent:    ua,
	})
	if terr != nil {
		logf("status through the Statement Execution API only: thrift client: %v", terr)
		return c, nil
	}
	c.thrift = tc
	c.status = databricks.StatusWithFallback(tc, rest)
	c.idle = append(c.idle, tc)
	return c, nil
}

// withProxy merges a proxy's facts into the sources (--proxy): INACTIVE
// from the client's last call, CLOSE_FAILED for a client's failed close,
// operations only the proxy saw, close/cancel with the real handle, and
// EXHAUSTED from a client's refused upsert (proxy.MergeCapacity).
func (c *conn) withProxy(ws WorkspaceConfig, ua string) error {
	admin, err := proxy.NewAdminClient(ws.Proxy, ws.ProxyToken, ua)
	if err != nil {
		return err
	}
	m := proxy.Merge(admin, c.disc, c.status, c.actions)
	m.SetServerIdleTimeout(ws.Thresholds.ServerIdleTimeout)
	c.disc, c.status, c.actions = m, m, m
	mc := proxy.MergeCapacity(admin, c.capacity)
	c.capacity = mc
	c.idle = append(c.idle, m, mc)
	return nil
}

// engineOptions is the one place the engine's options are built from a
// connection and the workspace flags; each command then changes what it
// does differently (a snapshot only observes).
func (c *conn) engineOptions(ws WorkspaceConfig, logf func(string, ...any)) poller.Options {
	return poller.Options{
		// With --proxy, discovery, status and actions carry the proxy's
		// facts (proxy.Merge, wired by connect).
		Discoverer: c.disc,
		Status:     c.status,
		// Query history by statement ids confirms live operations in
		// batches; per-operation calls stay for what only they tell.
		Batch: c.rest,
		// On a real workspace actions go through the Statement Execution
		// API: a Thrift handle rebuilt from a statement id lacks its secret,
		// and a server that refuses it would make a close look done. With
		// --proxy, an operation the proxy saw is acted on through it, with
		// its real handle.
		Actions:    c.actions,
		Capacity:   c.capacity,
		Settle:     c.rest,
		Thresholds: ws.Thresholds,
		Refresh:    ws.Refresh,
		ReadOnly:   ws.ReadOnly,
		Workspace:  model.Workspace{Host: c.rest.Host(), Warehouses: ws.Warehouses},
		Warehouses: c.rest, // explains an empty Operations view
		Idle:       c.idle,
		Logf:       logf,
		RowLimits:  ws.RowLimits,
		Probe:      ws.CapacityProbe,
		Learned:    learnedFor(ws.Learned, c.rest.Host()),
		// How far back the snapshot's clients[] aggregates look.
		ClientsWindow: ws.Window,
	}
}

// close drops the idle pooled connections of both clients.
func (c *conn) close() {
	c.rest.CloseIdleConnections()
	if c.thrift != nil {
		c.thrift.CloseIdleConnections()
	}
}
