package poller

import (
	"sync/atomic"
	"time"
)

// loop is the run loop's wake-up and what it is doing: parked until a
// time or a signal, and how many goroutines it started are still at work.
// Goroutines signal it when something changed (a poll answered, a close
// was queued); a harness on a fake clock asks it whether nothing can
// happen before the clock moves (settled).
type loop struct {
	wake    chan struct{}
	busy    atomic.Int64  // goroutines of the loop at work
	parked  atomic.Bool   // waiting for time or a wake
	at      atomic.Int64  // when the parked loop wakes by itself, unix ns
	sigGen  atomic.Uint64 // signals sent
	parkGen atomic.Uint64 // signals the parked loop has taken into account
	// changed, if set, is told whenever the loop may have settled.
	changed func()
	// refresh, when non-zero, is the discovery and capacity period set
	// at run time (Engine.SetRefresh), in ns; it replaces Options.Refresh.
	refresh atomic.Int64
}

// signal wakes the loop: something it schedules may have changed.
func (l *loop) signal() {
	l.sigGen.Add(1)
	select {
	case l.wake <- struct{}{}:
	default:
	}
	l.tell()
}

func (l *loop) tell() {
	if l.changed != nil {
		l.changed()
	}
}

// started counts a goroutine the loop spawned; stopped its end.
func (l *loop) started() { l.busy.Add(1) }
func (l *loop) stopped() {
	l.sigGen.Add(1) // before busy drops: no settled engine in between
	l.busy.Add(-1)
	l.signal()
}

// park records that the loop waits until at, having seen the signals up
// to gen.
func (l *loop) park(gen uint64, at time.Time) {
	l.at.Store(at.UnixNano())
	l.parkGen.Store(gen)
	l.parked.Store(true)
	l.tell()
}

func (l *loop) unpark() { l.parked.Store(false) }

// settled reports that nothing can happen until the clock passes now:
// the loop is parked with nothing due and sleeping goroutines, all
// waiting out backoffs that end after now, are every busy one.
func (l *loop) settled(now time.Time, sleeping int, allAfter bool) bool {
	if !l.parked.Load() || l.parkGen.Load() != l.sigGen.Load() || l.at.Load() <= now.UnixNano() {
		return false
	}
	return allAfter && int64(sleeping) == l.busy.Load()
}
