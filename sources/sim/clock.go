package sim

import (
	"sync"
	"time"
)

// Clock is the simulator's notion of now. Only the state machine, the
// reaper and the timestamps use it; network deadlines stay on wall time.
type Clock interface {
	Now() time.Time
}

// WallClock is time.Now.
type WallClock struct{}

func (WallClock) Now() time.Time { return time.Now() }

// ManualClock only moves when told to, so tests drive reaper schedules
// without sleeping.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock starts a manual clock at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
