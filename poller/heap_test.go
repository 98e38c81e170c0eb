package poller

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// The poll heap files a put-off poll lazily (pollHeap.reschedule): still,
// popDue never hands out a poll before its time, hands out every due one,
// in the order of their times, whatever the mix of put-offs and
// bring-forwards.
func TestPollHeapPutOffPollsComeAtTheirNewTime(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 50 {
		var h pollHeap
		ens := make([]*entry, 40)
		for i := range ens {
			ens[i] = &entry{idx: -1, next: stamp(t0.Add(time.Duration(r.IntN(100)) * time.Second))}
			h.reschedule(ens[i])
		}
		for range 200 { // put off or bring forward at random
			en := ens[r.IntN(len(ens))]
			en.next = stamp(t0.Add(time.Duration(r.IntN(100)) * time.Second))
			h.reschedule(en)
		}
		var last time.Time
		got := 0
		for now := t0; now.Before(t0.Add(101 * time.Second)); now = now.Add(time.Second) {
			for en := h.popDue(now); en != nil; en = h.popDue(now) {
				next := unstamp(en.next)
				if next.After(now) {
					t.Fatalf("round %d: a poll due at %v handed out at %v", round, next, now)
				}
				if next.Before(last) {
					t.Fatalf("round %d: %v after %v", round, next, last)
				}
				if now.Sub(next) >= time.Second {
					t.Fatalf("round %d: a poll due at %v handed out late, at %v", round, next, now)
				}
				last = next
				got++
			}
		}
		if got != len(ens) || len(h) != 0 {
			t.Fatalf("round %d: %d of %d polls handed out, %d left", round, got, len(ens), len(h))
		}
	}
}

// The flag deadline heap files a put-off deadline lazily too
// (dueHeap.set): popDue hands out every operation at its latest due
// time, never before it.
func TestDueHeapPutOffDeadlinesComeAtTheirNewTime(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 50 {
		var h dueHeap
		ens := make([]*entry, 40)
		for i := range ens {
			ens[i] = &entry{didx: -1}
			h.set(ens[i], t0.Add(time.Duration(r.IntN(100))*time.Second))
		}
		for range 200 {
			en := ens[r.IntN(len(ens))]
			h.set(en, t0.Add(time.Duration(r.IntN(100))*time.Second))
		}
		got := 0
		for now := t0; now.Before(t0.Add(101 * time.Second)); now = now.Add(time.Second) {
			for en := h.popDue(now); en != nil; en = h.popDue(now) {
				if due := unstamp(en.due); due.After(now) || now.Sub(due) >= time.Second {
					t.Fatalf("round %d: due at %v, handed out at %v", round, due, now)
				}
				got++
			}
		}
		if got != len(ens) || len(h) != 0 {
			t.Fatalf("round %d: %d of %d handed out, %d left", round, got, len(ens), len(h))
		}
	}
}

// wallShifted is t with its wall clock reading moved by d and its
// monotonic reading kept: what a wall clock stepped or slewed between two
// time.Now calls gives. Only unsafe makes one (time.Time's layout: wall,
// ext, loc; with a monotonic reading, wall's bits 30–62 hold seconds).
func wallShifted(t time.Time, d time.Duration) time.Time {
	type timeLayout struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	p := (*timeLayout)(unsafe.Pointer(&t))
	if p.wall>>63 == 0 || d%time.Second != 0 {
		panic("wallShifted: needs a monotonic reading and whole seconds")
	}
	p.wall = uint64(int64(p.wall) + int64(d/time.Second)<<30)
	return t
}

// The heaps decide by their keys alone, which follow the monotonic clock
// as time comparisons do. Under a wall clock stepped back, a poll whose
// wall reading was already past (key by UnixNano: due) but whose
// monotonic reading was not (After: not yet) was filed again at the same
// key for ever: the engine's loop spun with its lock held (a CI run hung
// on it). Now the poll is not due until its monotonic time, and then it is.
func TestHeapsFollowTheMonotonicClock(t *testing.T) {
	now := time.Now()
	next := wallShifted(now.Add(time.Millisecond), -2*time.Second)
	if !next.After(now) || next.UnixNano() > now.UnixNano() {
		t.Fatalf("wallShifted: After %v, wall before now %v; want both true", next.After(now), next.UnixNano() <= now.UnixNano())
	}
	var h pollHeap
	en := &entry{idx: -1, didx: -1, next: stamp(next)}
	h.reschedule(en)
	var d dueHeap
	d.set(en, next)
	done := make(chan [4]*entry, 1)
	go func() {
		later := now.Add(2 * time.Millisecond)
		done <- [4]*entry{h.popDue(now), d.popDue(now), h.popDue(later), d.popDue(later)}
	}()
	select {
	case got := <-done:
		if got[0] != nil || got[1] != nil || got[2] != en || got[3] != en {
			t.Errorf("popDue before its time: poll %v, deadline %v; after: poll %v, deadline %v; want nil, nil, en, en",
				got[0] != nil, got[1] != nil, got[2] != nil, got[3] != nil)
		}
	case <-time.After(10 * time.Second): // a bound on a spin, not a wait for an event
		t.Fatal("popDue did not return in 10 s: the heap spins on a key it files again unchanged")
	}
}
