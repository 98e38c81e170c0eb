package poller

import (
	"testing"
	"time"
)

// The loop is settled only while parked with every signal taken into
// account, its own wake-up ahead, and every busy goroutine asleep in a
// backoff that ends later.
func TestLoopSettled(t *testing.T) {
	l := &loop{wake: make(chan struct{}, 1)}
	now := time.Unix(1000, 0)
	if l.settled(now, 0, true) {
		t.Fatal("settled before it ever parked")
	}
	l.park(l.sigGen.Load(), now.Add(time.Second))
	if !l.settled(now, 0, true) {
		t.Fatal("parked with nothing due: not settled")
	}
	if l.settled(now.Add(time.Second), 0, true) {
		t.Fatal("settled at its own wake-up time")
	}
	l.started()
	if l.settled(now, 0, true) || !l.settled(now, 1, true) || l.settled(now, 1, false) {
		t.Fatal("a busy goroutine: settled only while it sleeps in a backoff ending later")
	}
	l.signal()
	if l.settled(now, 1, true) {
		t.Fatal("settled with a signal the parked loop has not seen")
	}
	if len(l.wake) != 1 {
		t.Fatal("a signal did not wake the loop")
	}
}
