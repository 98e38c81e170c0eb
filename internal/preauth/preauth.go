// Package preauth bounds what a connection costs before it authenticates:
// the one connection guard of dbxtop's listeners (serve, the proxy and its
// admin API).
//
// net/http sets its own read deadlines on a connection (headers, request,
// idle between requests) through SetReadDeadline. Until a request on the
// connection has authenticated, and while no handler runs on it, a Conn
// holds every such deadline to at most Timeout from now: a stranger may
// neither trickle its headers nor park an idle socket. While a handler
// runs, net/http's own deadlines stand (a proxied call may take minutes
// before its answer proves the credential). Once authenticated, the cap
// is lifted and the read pending under a running handler gets no
// deadline, so a long answer (serve's event stream) outlives the
// server's ReadTimeout.
package preauth

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Listener wraps each accepted connection in a *Conn.
type Listener struct {
	net.Listener
	Timeout time.Duration
}

// Accept accepts a connection and bounds its first read.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g := &Conn{Conn: c, timeout: l.Timeout}
	_ = g.SetReadDeadline(time.Time{})
	return g, nil
}

// Conn is an accepted connection under the guard.
type Conn struct {
	net.Conn
	timeout time.Duration
	authed  atomic.Bool
	active  atomic.Bool
}

func (c *Conn) bound(t time.Time) time.Time {
	if c.authed.Load() || c.active.Load() {
		return t
	}
	if lim := time.Now().Add(c.timeout); t.IsZero() || t.After(lim) {
		return lim
	}
	return t
}

// SetReadDeadline sets t, held to the pre-authentication bound.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.bound(t)) }

// SetDeadline sets the write deadline t and the read deadline t, held to
// the pre-authentication bound.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// Authenticated reports whether a request on c has authenticated.
func (c *Conn) Authenticated() bool { return c.authed.Load() }

func (c *Conn) authenticate() {
	if !c.authed.Swap(true) {
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
}

// Of finds the guard under c (itself, or the connection under a TLS or
// other wrapping connection); nil when c is not guarded.
func Of(c net.Conn) *Conn {
	for c != nil {
		if g, ok := c.(*Conn); ok {
			return g
		}
		nc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = nc.NetConn()
	}
	return nil
}

type key struct{}

// Track sets srv up to follow its guarded connections: whether a handler
// runs on each (ConnState), and each request's guard (ConnContext) for
// MarkAuthenticated. It replaces srv's ConnContext and ConnState.
func Track(srv *http.Server) {
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if g := Of(c); g != nil {
			return context.WithValue(ctx, key{}, g)
		}
		return ctx
	}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		g := Of(c)
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

// MarkAuthenticated lifts the pre-authentication bound of the connection
// ctx's request came on (a context from a server set up with Track).
func MarkAuthenticated(ctx context.Context) {
	if g, _ := ctx.Value(key{}).(*Conn); g != nil {
		g.authenticate()
	}
}
