package poller

import (
	"container/heap"
	"time"
)

// pollHeap orders followed operations by their next poll, so each loop
// turn finds due polls in O(log n) instead of scanning 10,000 entries.
type pollHeap []*entry

func (h pollHeap) Len() int           { return len(h) }
func (h pollHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h pollHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *pollHeap) Push(x any) {
	en := x.(*entry)
	en.idx = len(*h)
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

func (h *pollHeap) push(en *entry)   { heap.Push(h, en) }
func (h *pollHeap) popMin() *entry   { return heap.Pop(h).(*entry) }
func (h *pollHeap) remove(en *entry) { heap.Remove(h, en.idx) }
func (h *pollHeap) reschedule(en *entry) {
	if en.idx >= 0 {
		heap.Fix(h, en.idx)
	} else {
		heap.Push(h, en)
	}
}

// dueHeap orders operations by the instant their view may next differ
// with time alone (a flag deadline or a running figure,
// model.ViewCache.Until): evalFlags looks at those that are due and at
// those that changed, not at every followed operation each second.
type dueHeap []*entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].didx, h[j].didx = i, j
}
func (h *dueHeap) Push(x any) {
	en := x.(*entry)
	en.didx = len(*h)
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

func (h *dueHeap) popMin() *entry { return heap.Pop(h).(*entry) }
func (h *dueHeap) remove(en *entry) {
	if en.didx >= 0 {
		heap.Remove(h, en.didx)
	}
}
func (h *dueHeap) set(en *entry, at time.Time) {
	en.due = at
	if en.didx >= 0 {
		heap.Fix(h, en.didx)
	} else {
		heap.Push(h, en)
	}
}
