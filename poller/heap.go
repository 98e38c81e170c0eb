package poller

import "container/heap"

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
