package poller

import (
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// Concurrency from latency (docs/retry-policy.md, "Concurrency"): by
// Little's law the calls in flight needed to sustain a rate λ with a
// latency W are λ·W. The limiter keeps W (a moving average of answered
// attempts) and an AIMD cap: halved on throttling (429, 503), grown by
// one per cap answers otherwise. The engine's in-flight bound is
//
//	min(max(minInFlight, ⌈2·λ·W⌉), cap, ceiling, ceiling·budget share)
//
// The factor 2 absorbs jitter in W and bursts in λ.
type limiter struct {
	mu          sync.Mutex
	ceiling     int
	cap         float64
	lat         time.Duration // EWMA of answered attempts; 0 = none yet
	throttledAt time.Time     // the last throttled answer
	cutAt       time.Time     // the last multiplicative decrease
	throttles   int64
}

// minInFlight keeps a few calls in flight whatever the estimate says, so
// that a handful of hung calls (or a clock that never moves in tests)
// cannot stall every other operation.
const minInFlight = 8

// throttleHold is how long after a throttled answer the schedule counts
// as throttled (for the freshness report), and the shortest spacing of
// two multiplicative decreases: one burst of 429s is one signal.
const throttleHold = 10 * time.Second

func newLimiter(ceiling int) *limiter {
	return &limiter{ceiling: ceiling, cap: float64(ceiling)}
}

// observe records one attempt's outcome and duration.
func (l *limiter) observe(now time.Time, d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if throttledErr(err) {
		l.throttles++
		if l.cutAt.IsZero() || now.Sub(l.cutAt) >= time.Second {
			l.cap = math.Max(1, l.cap/2)
			l.cutAt = now
		}
		l.throttledAt = now
		return
	}
	if err != nil {
		return // transport errors say nothing about the server's rate
	}
	if l.lat == 0 {
		l.lat = d
	} else {
		l.lat = (l.lat*7 + d) / 8
	}
	l.cap = math.Min(float64(l.ceiling), l.cap+1/math.Max(1, l.cap))
}

// limit is the in-flight bound for a demand of rate calls per second,
// with budget the share of the retry budget still available (0..1).
func (l *limiter) limit(rate, budget float64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	need := float64(minInFlight)
	if l.lat > 0 {
		need = math.Max(need, math.Ceil(2*rate*l.lat.Seconds()))
	}
	n := math.Min(need, math.Floor(l.cap))
	n = math.Min(n, float64(l.ceiling))
	n = math.Min(n, math.Max(1, math.Ceil(float64(l.ceiling)*budget)))
	return max(1, int(n))
}

// Capacity is model.Capacity (the TUI reads it without the poller).
type Capacity = model.Capacity

func (l *limiter) capacity(now time.Time) Capacity {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Capacity{Latency: l.lat, Cap: int(l.cap), Ceiling: l.ceiling, Throttles: l.throttles,
		Throttled: !l.throttledAt.IsZero() && now.Sub(l.throttledAt) < throttleHold}
}

// throttledErr: the server asked us to slow down (429 or 503, whatever
// the error code, except RESOURCE_EXHAUSTED, which is capacity, not rate).
func throttledErr(err error) bool {
	var he *sources.HTTPError
	if err == nil || !errors.As(err, &he) {
		return false
	}
	if he.ErrorCode == "RESOURCE_EXHAUSTED" {
		return false
	}
	return he.StatusCode == http.StatusTooManyRequests || he.StatusCode == http.StatusServiceUnavailable
}

// Freshness is model.Freshness.
type Freshness = model.Freshness
