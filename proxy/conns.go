package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Connection deadlines (docs/proxy.md "Connections"). A connection costs
// little until it authenticates: until the upstream (or, on the admin
// listener, the admin token) has accepted a credential on it, it must
// send each request within DefaultPreAuthTimeout and is closed when idle
// that long. Once authenticated it may stay idle for the listener's idle
// timeout, at least a minute, so drivers' keep-alive connections between
// polls are not cut.
const (
	DefaultPreAuthTimeout = 10 * time.Second
	clientIdleTimeout     = 5 * time.Minute
	adminIdleTimeout      = 2 * time.Minute
	// Header bytes a connection may send per request: an OAuth token is
	// a few KB; net/http's default is 1 MiB.
	clientMaxHeaderBytes = 64 << 10
	adminMaxHeaderBytes  = 16 << 10
)

// guardedListener wraps each accepted connection in a guardedConn (under
// TLS, so the server still sees a *tls.Conn).
type guardedListener struct {
	net.Listener
	preAuth time.Duration
}

func (l guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c, preAuth: l.preAuth}, nil
}

// guardedConn bounds every read deadline net/http sets while the
// connection is not authenticated and no handler runs on it (reading a
// request, or idle between requests) to preAuth from now. While a
// handler runs, net/http's own deadlines stand: a first ExecuteStatement
// may take minutes before its answer authenticates the connection.
type guardedConn struct {
	net.Conn
	preAuth time.Duration
	authed  atomic.Bool
	active  atomic.Bool
}

func (c *guardedConn) SetReadDeadline(t time.Time) error {
	if !c.authed.Load() && !c.active.Load() {
		if lim := time.Now().Add(c.preAuth); t.IsZero() || t.After(lim) {
			t = lim
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *guardedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// guardOf finds the guardedConn under c (a *tls.Conn or itself).
func guardOf(c net.Conn) *guardedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	g, _ := c.(*guardedConn)
	return g
}

type guardKey struct{}

// guardServer sets srv up to track its connections' guards.
func guardServer(srv *http.Server) {
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if g := guardOf(c); g != nil {
			return context.WithValue(ctx, guardKey{}, g)
		}
		return ctx
	}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		g := guardOf(c)
		if g == nil {
			return
		}
		switch st {
		case http.StateActive:
			g.active.Store(true)
		case http.StateIdle:
			g.active.Store(false)
		}
	}
}

// markAuthenticated lifts the pre-authentication deadline of the
// connection ctx's request came on.
func markAuthenticated(ctx context.Context) {
	if g, _ := ctx.Value(guardKey{}).(*guardedConn); g != nil && !g.authed.Load() {
		g.authed.Store(true)
	}
}

// accepted says whether an upstream answer shows the request's
// credential was accepted: answered, neither refused (401, 403) nor a
// server-side failure that proves nothing (5xx).
func accepted(req *http.Request, resp *http.Response) bool {
	return resp != nil && req.Header.Get("Authorization") != "" &&
		resp.StatusCode >= 200 && resp.StatusCode < 500 && !refused(resp.StatusCode)
}
