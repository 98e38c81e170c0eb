package poller

import (
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
