package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/thrift"
	"github.com/dbxtop/dbxtop/textfmt"
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
	// or with --proxy the proxy's facts merged in (adminapi.Merge).
	disc    sources.Discoverer
	actions sources.ActionSource
	// capacity lists Vector Search endpoints: the REST client, or with
	// --proxy the refusals the proxy saw merged in (adminapi.MergeCapacity).
	capacity sources.CapacitySource
	// proxies says how each proxy fared (nil without --proxy).
	proxies sources.ProxyLister
}

// defaultAuthTimeout bounds connect's auth resolution (an OAuth token
// request, a CLI, the SDK's whole credential chain) unless --auth-timeout
// says otherwise: past it connect fails with what to set. The SDK's
// chain can otherwise hold its lock for minutes (a file-OIDC provider
// retrying), and every call waits on it.
const defaultAuthTimeout = 15 * time.Second

// AuthTimeoutError: the credential chain gave no answer in time.
type AuthTimeoutError struct {
	Host    string
	Timeout time.Duration
	Tried   string // what the command line and environment gave
}

func (e *AuthTimeoutError) Error() string {
	return fmt.Sprintf("no credentials for %s resolved within %s (--auth-timeout): the Databricks SDK's credential chain "+
		"(%s, then OAuth, the Databricks and cloud CLIs, OIDC token files) gave no answer; set DATABRICKS_TOKEN or --token, "+
		"pick a --profile, or run `databricks auth login --host %s`", e.Host, textfmt.Duration(e.Timeout), e.Tried, e.Host)
}

// triedCredentials says which explicit credentials were given (never
// their values).
func triedCredentials(ws WorkspaceConfig, getenv func(string) string) string {
	var tried []string
	if ws.Token != "" {
		tried = append(tried, "the given personal access token")
	} else {
		tried = append(tried, "no personal access token (neither DATABRICKS_TOKEN nor --token is set)")
	}
	if p := ws.Profile; p != "" {
		tried = append(tried, "profile "+p)
	} else if p := getenv("DATABRICKS_CONFIG_PROFILE"); p != "" {
		tried = append(tried, "profile "+p+" (DATABRICKS_CONFIG_PROFILE)")
	} else {
		tried = append(tried, "the DEFAULT profile of ~/.databrickscfg")
	}
	return strings.Join(tried, ", ")
}

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
	timeout := ws.AuthTimeout
	if timeout <= 0 {
		timeout = defaultAuthTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := rest.CheckWorkspace(cctx); err != nil {
		return nil, err
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, &AuthTimeoutError{Host: rest.Host(), Timeout: timeout, Tried: triedCredentials(ws, os.Getenv)}
	}
	c = &conn{rest: rest, status: rest, idle: []sources.IdleCloser{rest}, disc: rest, actions: rest, capacity: rest}
	defer func() {
		if len(ws.Proxies) > 0 && err == nil {
			err = c.withProxy(ws, ua, logf)
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

// withProxy merges the proxies' facts into the sources (--proxy): INACTIVE
// from the client's last call, CLOSE_FAILED for a client's failed close,
// operations only a proxy saw, close/cancel with the real handle, and
// EXHAUSTED from a client's refused upsert (adminapi.MergeCapacity, from
// the proxies given by admin URL).
func (c *conn) withProxy(ws WorkspaceConfig, ua string, logf func(string, ...any)) error {
	targets, static, err := proxyTargets(ws.Proxies, ws.ProxyToken, ws.DNSServer, func(w string) {
		ws.engineLogger(logf).Warn(w)
	})
	if err != nil {
		return err
	}
	m := adminapi.MergeAll(targets, ua, c.disc, c.status, c.actions)
	c.disc, c.status, c.actions, c.proxies = m, m, m, m
	c.idle = append(c.idle, m)
	for _, t := range static {
		admin, err := adminapi.NewAdminClient(t.URL, t.Token, ua)
		if err != nil {
			return err
		}
		mc := adminapi.MergeCapacity(admin, c.capacity)
		c.capacity = mc
		c.idle = append(c.idle, mc)
	}
	return nil
}

// engineOptions is the one place the engine's options are built from a
// connection and the workspace flags; each command then changes what it
// does differently (a snapshot only observes).
func (c *conn) engineOptions(ws WorkspaceConfig, logf func(string, ...any)) poller.Options {
	return poller.Options{
		// With --proxy, discovery, status and actions carry the proxy's
		// facts (adminapi.Merge, wired by connect).
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
		Proxies:    c.proxies,
		Idle:       c.idle,
		Logger:     ws.engineLogger(logf),
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

// engineLogger is the engines' logger: a service's own (serve: its
// records keep their level and attributes), else logf's lines.
func (ws WorkspaceConfig) engineLogger(logf func(string, ...any)) *slog.Logger {
	if ws.serviceLogger != nil {
		return ws.serviceLogger
	}
	return logfLogger(logf)
}

// logfLogger is a *slog.Logger whose records become lines of logf (the
// --log-file's writer, or serve's log): level, message and attributes
// in slog's text form, without slog's own time (logf stamps each line).
func logfLogger(logf func(string, ...any)) *slog.Logger {
	return slog.New(slog.NewTextHandler(logfWriter(logf), &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// logfWriter passes each record the text handler writes (one line) to logf.
type logfWriter func(string, ...any)

func (w logfWriter) Write(p []byte) (int, error) {
	w("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
