package serve

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Connections cost little until they authenticate. A connection that has
// not yet carried a request with valid credentials may sit idle, or take
// to send its headers, at most PreAuthTimeout; one that has may stay idle
// AuthIdleTimeout between requests (drivers and attached TUIs keep their
// connection between polls). Request headers are capped at
// MaxHeaderBytes. docs/fleet.md states the bounds.
const (
	// DefaultPreAuthTimeout bounds a connection that has not authenticated.
	DefaultPreAuthTimeout = 10 * time.Second
	// AuthIdleTimeout is how long an authenticated connection may idle.
	AuthIdleTimeout = 2 * time.Minute
	// ReadTimeout bounds reading one request (serve's take no body).
	ReadTimeout = 30 * time.Second
	// MaxHeaderBytes caps one request's headers.
	MaxHeaderBytes = 16 << 10
)

// authConn is an accepted connection whose read deadlines are held to
// preAuth until a request on it authenticates: net/http sets its own
// (header, request, idle) deadlines through SetReadDeadline, and before
// authentication none may lie further away than preAuth.
type authConn struct {
	net.Conn
	preAuth time.Duration
	authed  atomic.Bool
}

func (c *authConn) cap(t time.Time) time.Time {
	if c.authed.Load() {
		return t
	}
	if limit := time.Now().Add(c.preAuth); t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

func (c *authConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.cap(t)) }

func (c *authConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetReadDeadline(c.cap(t))
}

// authenticated lifts the cap: from now on net/http's own deadlines
// apply (the idle timeout between requests among them). The read pending
// while an authenticated handler runs (net/http's background read, which
// cancels the request when it fails) gets no deadline, so the event
// stream outlives ReadTimeout; serve's requests carry no body.
func (c *authConn) authenticated() {
	c.authed.Store(true)
	_ = c.Conn.SetReadDeadline(time.Time{})
}

// authListener wraps each accepted connection in an authConn whose first
// read deadline is already set.
type authListener struct {
	net.Listener
	preAuth time.Duration
}

func (l authListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ac := &authConn{Conn: c, preAuth: l.preAuth}
	_ = ac.SetReadDeadline(time.Time{})
	return ac, nil
}

type connKey struct{}

// connContext lets a handler reach the authConn under a request (under
// TLS, the connection net/http sees is the tls.Conn around it).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	if ac, ok := c.(*authConn); ok {
		return context.WithValue(ctx, connKey{}, ac)
	}
	return ctx
}

// markAuthenticated lifts the pre-authentication bound of r's connection.
func markAuthenticated(r *http.Request) {
	if ac, ok := r.Context().Value(connKey{}).(*authConn); ok {
		ac.authenticated()
	}
}
