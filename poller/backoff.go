package poller

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// ceilings returns the un-jittered backoff ceilings base, base·2, … capped
// at max. backoff/v5's ExponentialBackOff computes the sequence (with its
// overflow guard); its own randomisation is symmetric around the ceiling
// and would exceed the cap, so we jitter by hand (equalJitter).
func ceiling(base, max time.Duration, retry int) time.Duration {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     base,
		RandomizationFactor: 0,
		Multiplier:          2,
		MaxInterval:         max,
	}
	b.Reset()
	var c time.Duration
	for i := 0; i < retry; i++ {
		c = b.NextBackOff()
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
	return equalJitter(ceiling(closeBase, closeCap, fails), r)
}
