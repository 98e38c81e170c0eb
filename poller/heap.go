package poller

import (
	"container/heap"
	"time"
)

// stampBase anchors stamp: a reading of the monotonic clock.
var stampBase = time.Now()

// stamp is t as a heap key: nanoseconds since stampBase, by the monotonic
// clock when t has a reading of it (every time.Now does; a test clock's
// times do not, and then by the wall clock, as their comparisons are).
// Keys decide alone, never beside a time.Time comparison: wall and
// monotonic readings differ by tens of nanoseconds here, and a key by
// UnixNano that said "due" while After said "not yet" once made popDue
// spin for ever with the engine's lock held.
func stamp(t time.Time) int64 { return int64(t.Sub(stampBase)) }

// unstamp is the instant of key k, comparable with the times it came
// from.
func unstamp(k int64) time.Time { return stampBase.Add(time.Duration(k)) }

// pollHeap orders followed operations by their next poll, so each loop
// turn finds due polls in O(log n) instead of scanning 10,000 entries.
// It is ordered by entry.key, which is entry.next or earlier: a poll put
// off (every confirmation of a live operation puts off its fallback
// poll) keeps its place, and the loop files it again by its new time
// when the old one comes (popDue); brought forward, it moves at once.
type pollHeap []*entry

func (h pollHeap) Len() int           { return len(h) }
func (h pollHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h pollHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = int32(i), int32(j)
}
func (h *pollHeap) Push(x any) {
	en := x.(*entry)
	en.idx = int32(len(*h))
	*h = append(*h, en)
}
func (h *pollHeap) Pop() any {
	old := *h
	en := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	en.idx = -1
	return en
}

func (h *pollHeap) push(en *entry) {
	en.key = en.next
	heap.Push(h, en)
}
func (h *pollHeap) popMin() *entry   { return heap.Pop(h).(*entry) }
func (h *pollHeap) remove(en *entry) { heap.Remove(h, int(en.idx)) }

// reschedule files en by en.next; a later time than its place is left
// for popDue (a poll put off costs nothing until its old time comes).
func (h *pollHeap) reschedule(en *entry) {
	switch {
	case en.idx < 0:
		h.push(en)
	case en.next < en.key:
		en.key = en.next
		heap.Fix(h, int(en.idx))
	}
}

// popDue takes out the first operation whose poll is due at now, filing
// again those whose poll was put off; nil when none is due.
func (h *pollHeap) popDue(now time.Time) *entry {
	k := stamp(now)
	for len(*h) > 0 && (*h)[0].key <= k {
		en := (*h)[0]
		if en.next > k { // keys decide, never After: each turn moves a key past k
			en.key = en.next
			heap.Fix(h, 0)
			continue
		}
		return h.popMin()
	}
	return nil
}

// first is when the first filed poll may be due (zero: none).
func (h pollHeap) first() time.Time {
	if len(h) == 0 {
		return time.Time{}
	}
	return unstamp(h[0].key)
}

// dueHeap orders operations by the instant their view may next differ
// with time alone (a flag deadline or a running figure,
// model.ViewCache.Until): evalFlags looks at those that are due and at
// those that changed, not at every followed operation each second. Like
// pollHeap it is ordered by a key that is due or earlier: every
// confirmation of a live operation puts off its STALE deadline, and the
// entry keeps its place until its old time (popDue).
type dueHeap []*entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].dkey < h[j].dkey }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].didx, h[j].didx = int32(i), int32(j)
}
func (h *dueHeap) Push(x any) {
	en := x.(*entry)
	en.didx = int32(len(*h))
	*h = append(*h, en)
}
func (h *dueHeap) Pop() any {
	old := *h
	en := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	en.didx = -1
	return en
}

func (h *dueHeap) remove(en *entry) {
	if en.didx >= 0 {
		heap.Remove(h, int(en.didx))
	}
}

// set files en as due at at; a later time than its place is left for
// popDue.
func (h *dueHeap) set(en *entry, at time.Time) {
	en.due = stamp(at)
	switch {
	case en.didx < 0:
		en.dkey = en.due
		heap.Push(h, en)
	case en.due < en.dkey:
		en.dkey = en.due
		heap.Fix(h, int(en.didx))
	}
}

// popDue takes out the first operation due at now, filing again those
// whose time was put off; nil when none is due.
func (h *dueHeap) popDue(now time.Time) *entry {
	k := stamp(now)
	for len(*h) > 0 && (*h)[0].dkey <= k {
		en := (*h)[0]
		if en.due > k {
			en.dkey = en.due
			heap.Fix(h, 0)
			continue
		}
		return heap.Pop(h).(*entry)
	}
	return nil
}
