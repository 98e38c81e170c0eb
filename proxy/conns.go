package proxy

import (
	"net/http"
	"time"
)

// Connection deadlines (docs/proxy.md "Connections"; internal/preauth). A connection costs
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

// accepted says whether an upstream answer shows the request's
// credential was accepted: answered, neither refused (401, 403) nor a
// server-side failure that proves nothing (5xx).
func accepted(req *http.Request, resp *http.Response) bool {
	return resp != nil && req.Header.Get("Authorization") != "" &&
		resp.StatusCode >= 200 && resp.StatusCode < 500 && !refused(resp.StatusCode)
}
