package poller

import (
	"fmt"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Poll intervals (docs/retry-policy.md, "Schedule"). A long-running
// operation is polled every 3.05 s ± 8 %: 19.7 calls per operation-minute
// (≤ 20), and a state change waits for the next poll: p95 ≈ 2.90 s, with
// some margin under the 3 s goal that 3.1 s would not leave.
const (
	pollYoung    = 1 * time.Second         // age < 10 s
	pollWarm     = 2 * time.Second         // age < 1 min
	pollLong     = 3050 * time.Millisecond // long-running
	pollTerminal = 10 * time.Second        // terminal but open: UNCLOSED candidate
	pollJitter   = 0.08
)

// pollInterval is the delay before the next status poll of op.
func pollInterval(op *model.Operation, now time.Time, r float64) time.Duration {
	var d time.Duration
	start := op.StartedAt
	if start.IsZero() || start.After(now) {
		start = op.FirstSeenAt
	}
	switch age := now.Sub(start); {
	case op.State.Terminal():
		d = pollTerminal
	case age < 10*time.Second:
		d = pollYoung
	case age < time.Minute:
		d = pollWarm
	default:
		d = pollLong
	}
	// Jitter spreads polls so that operations discovered together do not
	// poll in lockstep.
	return time.Duration(float64(d) * (1 - pollJitter + 2*pollJitter*r))
}

// scheduler decides when each followed operation is polled and how many
// calls are in flight: the poll heap (heap.go), the demand λ of Little's
// law (the sum of the expected per-operation poll rates) and the
// limiter that sizes concurrency from latency (limit.go). Called with
// the engine's lock held.
type scheduler struct {
	heap     pollHeap
	inflight int // polls and batch requests in flight
	lim      *limiter
	rateSum  float64 // Σ entry.rate
}

// at files en's next poll at t (a later time than its place is filed
// again when its old time comes).
func (s *scheduler) at(en *entry, t time.Time) {
	en.next = stamp(t)
	s.heap.reschedule(en)
}

// remove stops polling en.
func (s *scheduler) remove(en *entry) {
	if en.idx >= 0 {
		s.heap.remove(en)
	}
	s.setRate(en, 0)
}

// popDue takes out the first operation whose poll is due (nil: none).
func (s *scheduler) popDue(now time.Time) *entry { return s.heap.popDue(now) }

// setRate keeps the demand in step with en's schedule.
func (s *scheduler) setRate(en *entry, r float64) {
	s.rateSum += r - en.rate
	en.rate = r
	if s.rateSum < 0 {
		s.rateSum = 0
	}
}

// check reports the first broken invariant: every filed entry sits at its
// index with a key no later than its next poll, in heap order, and none
// is both filed and being polled.
func (s *scheduler) check() error {
	for i, en := range s.heap {
		switch {
		case int(en.idx) != i:
			return fmt.Errorf("scheduler: %s at %d in the poll heap, index %d", en.op.StatementID, i, en.idx)
		case en.key > en.next:
			return fmt.Errorf("scheduler: %s filed at %d, after its poll at %d", en.op.StatementID, en.key, en.next)
		case i > 0 && s.heap[(i-1)/2].key > en.key:
			return fmt.Errorf("scheduler: the poll heap is out of order at %d", i)
		case en.polling:
			return fmt.Errorf("scheduler: %s is filed while its poll is in flight", en.op.StatementID)
		}
	}
	if s.inflight < 0 || s.rateSum < 0 {
		return fmt.Errorf("scheduler: %d calls in flight, demand %f", s.inflight, s.rateSum)
	}
	return nil
}
