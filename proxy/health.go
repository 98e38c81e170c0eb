package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// How often /v1/health may probe the upstream (answers in between reuse
// the last probe, so a health checker cannot turn the proxy into a load
// on the workspace), and how long a probe may take.
const (
	healthEvery   = 5 * time.Second
	healthTimeout = 3 * time.Second
)

// upstreamHealth is the last reachability probe of the upstream.
type upstreamHealth struct {
	mu        sync.Mutex
	checkedAt time.Time
	reachable bool
	reason    string
}

// probeUpstream asks the upstream's root for any HTTP answer (a GET of
// "/": no warehouse path, so it never starts a warehouse). Any answer,
// whatever its status, means the upstream is reachable; no answer gives
// a short reason that names no host and no credential.
func (p *Proxy) probeUpstream(ctx context.Context) (bool, string, time.Time) {
	h := &p.health
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if !h.checkedAt.IsZero() && now.Sub(h.checkedAt) < healthEvery {
		return h.reachable, h.reason, h.checkedAt
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.upstream.String()+"/", nil)
	req.Header.Set("User-Agent", p.o.UserAgent)
	resp, err := p.up.RoundTrip(req)
	h.checkedAt, h.reachable, h.reason = now, err == nil, ""
	if err == nil {
		_ = resp.Body.Close()
	} else {
		h.reason = reachReason(err)
	}
	return h.reachable, h.reason, h.checkedAt
}

// reachReason classifies a failed probe without echoing the error (it
// would carry the host).
func reachReason(err error) string {
	var ne net.Error
	var oe *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return "the upstream's name does not resolve"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "no answer within " + healthTimeout.String()
	case errors.As(err, &oe) && oe.Op == "dial":
		return "connection refused or unreachable"
	}
	return "the connection failed (TLS or transport)"
}
