package poller

import (
	"math/rand/v2"
	"testing"
	"time"
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
			ens[i] = &entry{idx: -1, next: t0.Add(time.Duration(r.IntN(100)) * time.Second)}
			h.reschedule(ens[i])
		}
		for range 200 { // put off or bring forward at random
			en := ens[r.IntN(len(ens))]
			en.next = t0.Add(time.Duration(r.IntN(100)) * time.Second)
			h.reschedule(en)
		}
		var last time.Time
		got := 0
		for now := t0; now.Before(t0.Add(101 * time.Second)); now = now.Add(time.Second) {
			for en := h.popDue(now); en != nil; en = h.popDue(now) {
				if en.next.After(now) {
					t.Fatalf("round %d: a poll due at %v handed out at %v", round, en.next, now)
				}
				if en.next.Before(last) {
					t.Fatalf("round %d: %v after %v", round, en.next, last)
				}
				if now.Sub(en.next) >= time.Second {
					t.Fatalf("round %d: a poll due at %v handed out late, at %v", round, en.next, now)
				}
				last = en.next
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
				if due := time.Unix(0, en.due); due.After(now) || now.Sub(due) >= time.Second {
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
