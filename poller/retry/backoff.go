package retry

import (
	"math/rand/v2"
	"time"
)

// ceiling returns the un-jittered backoff ceiling before the given retry
// (1-based): base, base·2, … capped at max. Doubling stops once the next
// step would pass max, so the product never overflows. The jitter is
// applied separately (equalJitter) because the cap must stay a true
// ceiling, which a symmetric randomisation around it would break.
func ceiling(base, max time.Duration, retry int) time.Duration {
	if retry <= 0 {
		return 0
	}
	c := base
	for i := 1; i < retry; i++ {
		if c >= max/2 {
			return max
		}
		c *= 2
	}
	return c
}

// equalJitter draws from [c/2, c]: the cap stays a true ceiling, and the
// floor c/2 keeps a retry from landing instantly on the same failing
// balancer (full jitter can draw 0).
func equalJitter(c time.Duration, r float64) time.Duration {
	half := c / 2
	return half + time.Duration(r*float64(c-half))
}

func randFloat() float64 { return rand.Float64() }

// CloseRetryWait is the close queue's wait before the next try of a close
// that failed fails times: equal jitter over 2 s doubling to 60 s. The
// engine's queue and the proxy's share it, so a failed close is retried
// alike wherever it is queued.
func CloseRetryWait(fails int, r float64) time.Duration {
	const closeBase, closeCap = 2 * time.Second, 60 * time.Second
	return equalJitter(ceiling(closeBase, closeCap, fails), r)
}
