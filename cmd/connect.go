package cmd

import (
	"context"

	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// conn is one workspace's sources, ready to hand to the engine: the REST
// client (discovery, capacity, Statement Execution API) and, where it can
// be built, the Thrift client (status with client activity).
type conn struct {
	rest   *databricks.Client
	thrift *thrift.Client // nil when Thrift is unavailable
	status poller.StatusSource
	idle   []poller.IdleCloser
	// disc and actions are discovery and close/cancel: the REST client,
	// or with --proxy the proxy's facts merged in (proxy.Merge).
	disc    poller.Discoverer
	actions poller.ActionSource
}

// connect resolves the workspace's auth and builds its sources. It makes
// no request itself.
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
	c = &conn{rest: rest, status: rest, idle: []poller.IdleCloser{rest}, disc: rest, actions: rest}
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
// operations only the proxy saw, and close/cancel with the real handle.
func (c *conn) withProxy(ws WorkspaceConfig, ua string) error {
	admin, err := proxy.NewAdminClient(ws.Proxy, ws.ProxyToken, ua)
	if err != nil {
		return err
	}
	m := proxy.Merge(admin, c.disc, c.status, c.actions)
	c.disc, c.status, c.actions = m, m, m
	c.idle = append(c.idle, m)
	return nil
}

func (c *conn) close() {
	c.rest.CloseIdleConnections()
	if c.thrift != nil {
		c.thrift.CloseIdleConnections()
	}
}
