package retry

import "time"

// Clock is the engine's and the policy's only source of time, so that
// schedules and backoff can be driven by a fake clock in tests. nil means
// the real clock.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ClockOr is c, or the real clock when c is nil.
func ClockOr(c Clock) Clock {
	if c == nil {
		return realClock{}
	}
	return c
}
