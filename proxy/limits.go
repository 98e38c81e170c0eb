package proxy

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// limiter enforces --max-conns (open client connections) and
// --max-conns-per-client (requests in flight per client, a client being
// one Authorization value, kept hashed: with HTTP/1.1 one busy connection
// each). Over a limit, the request is answered 503 with Retry-After.
type limiter struct {
	maxConns, perClient int
	conns               atomic.Int64
	mu                  sync.Mutex
	busy                map[authSum]int
}

// connState counts open connections (http.Server.ConnState).
func (l *limiter) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		l.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		l.conns.Add(-1)
	}
}

// admit says why r is refused ("" admitted); release must follow an
// admission.
func (l *limiter) admit(r *http.Request) (string, func()) {
	if l.maxConns > 0 && l.conns.Load() > int64(l.maxConns) {
		return "the proxy holds --max-conns client connections", nil
	}
	if l.perClient <= 0 {
		return "", func() {}
	}
	k := sumAuth(r.Header.Get("Authorization"))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy[k] >= l.perClient {
		return "this client already has --max-conns-per-client requests in flight", nil
	}
	l.busy[k]++
	return "", func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.busy[k]--; l.busy[k] <= 0 {
			delete(l.busy, k)
		}
	}
}

// refuseLimited answers a request over a limit.
func (p *Proxy) refuseLimited(w http.ResponseWriter, why string) {
	p.stats.limited.Add(1)
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusServiceUnavailable, "TEMPORARILY_UNAVAILABLE", "dbxtop-proxy: "+why+"; retry shortly")
}
