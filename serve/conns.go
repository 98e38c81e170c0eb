package serve

import "time"

// Connections cost little until they authenticate (internal/preauth). A connection that has
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
