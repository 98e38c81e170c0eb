package proxy

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Defaults of the back-pressure queue (--queue-wait, and the queue's
// bounds): a request over a limit waits for a slot rather than being
// refused at once, because @databricks/sql fails the user's query on a
// 503 and hive-driver hangs on one (docs/proxy.md "Limits").
const (
	DefaultQueueWait = 20 * time.Second
	// maxQueued bounds the requests waiting in total, maxQueuedPerClient
	// those of one client: past them a request is refused at once.
	maxQueued          = 1024
	maxQueuedPerClient = 256
)

// limiter enforces --max-conns (requests in flight in total) and
// --max-conns-per-client (requests in flight per client, a client being
// one credential: identity.sum). Slots count requests, never sockets: an
// idle keep-alive connection holds none. A request over a limit waits up
// to wait, in a queue bounded in total and per client, and is answered
// 503 with Retry-After only then.
type limiter struct {
	total, perClient int
	wait             time.Duration
	id               identity

	mu       sync.Mutex
	inflight int
	busy     map[authSum]int // requests in flight per client
	queued   int
	queuedBy map[authSum]int
	freed    chan struct{} // closed (and replaced) when a slot frees
}

func newLimiter(total, perClient int, wait time.Duration, id identity) *limiter {
	if wait <= 0 {
		wait = DefaultQueueWait
	}
	return &limiter{total: total, perClient: perClient, wait: wait, id: id,
		busy: map[authSum]int{}, queuedBy: map[authSum]int{}, freed: make(chan struct{})}
}

// fits says whether client k may start a request now. Called with mu held.
func (l *limiter) fits(k authSum) bool {
	return (l.total <= 0 || l.inflight < l.total) && (l.perClient <= 0 || l.busy[k] < l.perClient)
}

// admit waits for a slot for r. It returns "" and the release to call
// when the request ends, or why it was refused; waited says it queued.
func (l *limiter) admit(r *http.Request) (why string, waited bool, release func()) {
	if l.total <= 0 && l.perClient <= 0 {
		return "", false, func() {}
	}
	k := l.id.sum(r.Header.Get("Authorization"))
	l.mu.Lock()
	var deadline <-chan time.Time
	for !l.fits(k) {
		if deadline == nil {
			if l.queued >= maxQueued || l.queuedBy[k] >= maxQueuedPerClient {
				l.mu.Unlock()
				return "the proxy's queue of waiting requests is full", waited, nil
			}
			t := time.NewTimer(l.wait)
			defer t.Stop()
			deadline = t.C
		}
		waited = true
		why = l.enqueue(k, r.Context(), deadline)
		if why != "" {
			l.mu.Unlock()
			return why, waited, nil
		}
	}
	l.inflight++
	l.busy[k]++
	l.mu.Unlock()
	return "", waited, func() { l.done(k) }
}

// enqueue waits, unlocked, for a slot to free, the deadline or the
// client to leave; mu is held again on return. Called with mu held.
func (l *limiter) enqueue(k authSum, ctx context.Context, deadline <-chan time.Time) string {
	l.queued++
	l.queuedBy[k]++
	freed := l.freed
	l.mu.Unlock()
	why := ""
	select {
	case <-freed:
	case <-deadline:
		why = "no slot freed within --queue-wait " + l.wait.String() + " (--max-conns " + strconv.Itoa(l.total) +
			", --max-conns-per-client " + strconv.Itoa(l.perClient) + " requests in flight)"
	case <-ctx.Done():
		why = "the client left while waiting for a slot"
	}
	l.mu.Lock()
	l.queued--
	if l.queuedBy[k]--; l.queuedBy[k] <= 0 {
		delete(l.queuedBy, k)
	}
	return why
}

// done frees a request's slot and wakes the waiting.
func (l *limiter) done(k authSum) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if l.busy[k]--; l.busy[k] <= 0 {
		delete(l.busy, k)
	}
	if l.queued > 0 {
		close(l.freed)
		l.freed = make(chan struct{})
	}
}

// refuseLimited answers a request over a limit.
func (p *Proxy) refuseLimited(w http.ResponseWriter, why string) {
	p.stats.limited.Add(1)
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, "TEMPORARILY_UNAVAILABLE", "dbxtop-proxy: "+why+"; retry shortly")
}
