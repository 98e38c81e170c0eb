package poller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// endedWorkspace lists ended operations from its "query history" (with
// their end) and answers per-operation status from open: true or false
// tells openness, a missing entry cannot tell (the answer a strict server
// gives a handle rebuilt from a statement id). It counts status calls.
type endedWorkspace struct {
	mu    sync.Mutex
	ended map[string]time.Time // id → end
	open  map[string]bool
	calls map[string]int
}

func newEndedWorkspace() *endedWorkspace {
	return &endedWorkspace{ended: map[string]time.Time{}, open: map[string]bool{}, calls: map[string]int{}}
}

func (w *endedWorkspace) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []sources.Discovered
	for id, at := range w.ended {
		out = append(out, sources.Discovered{Op: model.Operation{StatementID: id, State: model.StateFinished, CompletedAt: at},
			Ref: sources.Ref{StatementID: id}})
	}
	return out, nil
}

func (w *endedWorkspace) Status(_ context.Context, ref sources.Ref) (sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls[ref.StatementID]++
	o, ok := w.open[ref.StatementID]
	if !ok {
		return sources.Status{}, fmt.Errorf("GetOperationStatus: INVALID_HANDLE: %w: %w", sources.ErrHandleGone, sources.ErrHandleUnverified)
	}
	return sources.Status{State: model.StateFinished, CompletedAt: w.ended[ref.StatementID], Open: &o, Source: model.StatusViaThrift}, nil
}

func (w *endedWorkspace) BatchLimit() int { return 100 }

func (w *endedWorkspace) StatusBatch(_ context.Context, refs []sources.Ref) (map[string]sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]sources.Status{}
	for _, r := range refs {
		if at, ok := w.ended[r.StatementID]; ok {
			out[r.StatementID] = sources.Status{State: model.StateFinished, CompletedAt: at, Source: model.StatusViaHistory}
		}
	}
	return out, nil
}

func (w *endedWorkspace) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.calls {
		n += c
	}
	return n
}

var beliefThresholds = model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: time.Minute}

// An operation that ended long before dbxtop started, still open on the
// server, is asked about on the first round and flagged UNCLOSED: it is
// never retired unasked because it ended long ago (the window counts
// from when dbxtop first could ask).
func TestOldLeakIsAskedOnTheFirstRound(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			w := newEndedWorkspace()
			clk := newFakeClock()
			w.ended["old-leak"] = clk.Now().Add(-2 * time.Hour)
			w.open["old-leak"] = true
			w.ended["old-closed"] = clk.Now().Add(-2 * time.Hour)
			w.open["old-closed"] = false
			o := Options{Discoverer: w, Status: w, Clock: clk, Thresholds: beliefThresholds}
			if batch {
				o.Batch = w
			}
			e := NewEngine(o)
			if err := e.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, v := range e.Snapshot().Operations {
				switch v.StatementID {
				case "old-leak":
					if v.Open == nil || !*v.Open || !hasFlag(v, model.FlagUnclosed) {
						t.Errorf("the old leak: open %v, flags %v; want open and UNCLOSED", v.Open, v.Flags)
					}
				case "old-closed":
					if v.Open == nil || *v.Open || len(v.Flags) > 0 {
						t.Errorf("the old closed operation: open %v, flags %v; want closed, no flag", v.Open, v.Flags)
					}
				}
			}
		})
	}
}

// Ended operations no source can tell about are asked a bounded number
// of times on a backoff, then shown with openness unknown and the reason;
// after the bound each costs at most one call per 10 operation-minutes,
// and once openness can no longer matter none is followed any more.
func TestCannotTellIsAskedABoundedNumberOfTimes(t *testing.T) {
	w := newEndedWorkspace()
	const n = 100
	start := newFakeClock().Now()
	for i := range n {
		w.ended[opID(i)] = start.Add(-30 * time.Second)
	}
	h := startEngine(t, Options{Discoverer: w, Status: w, Thresholds: beliefThresholds})
	h.run(10*time.Minute, 5*time.Second)
	first := w.total()
	// The bound: openAsksOnBackoff asks, then the window's last one
	// (the window is 5 × --leak-after + 1m = 6 minutes here).
	if max := n * (openAsksOnBackoff + 1); first > max {
		t.Errorf("%d status calls in the first 10 minutes, want at most %d", first, max)
	}
	h.run(60*time.Minute, 30*time.Second)
	if later := w.total() - first; later > 0 {
		t.Errorf("%d status calls in the next 60 minutes, want none: openness can no longer matter", later)
	}
	if f := h.e.Health().Followed; f != 0 {
		t.Errorf("%d operations still followed after 70 minutes, want 0", f)
	}
	for _, v := range h.e.Snapshot().Operations {
		if v.Open != nil || len(v.Flags) > 0 || !strings.Contains(v.StatusNote, "whether it is open is unknown") {
			t.Fatalf("%s: open %v, flags %v, note %q; want unknown, no flag, the reason", v.StatementID, v.Open, v.Flags, v.StatusNote)
		}
	}
}

// Past the backoff, an ended operation of unknown openness is asked at
// most once per openAskEvery while its window lasts.
func TestCannotTellAfterTheBoundAtMostOnePerTenMinutes(t *testing.T) {
	w := newEndedWorkspace()
	start := newFakeClock().Now()
	w.ended["x"] = start
	th := beliefThresholds
	th.LeakAfter = 10 * time.Minute // a 51-minute window
	h := startEngine(t, Options{Discoverer: w, Status: w, Thresholds: th})
	h.run(5*time.Minute, time.Second)
	at := w.total()
	if at != openAsksOnBackoff {
		t.Fatalf("%d asks on the backoff, want %d", at, openAsksOnBackoff)
	}
	for range 4 {
		h.run(10*time.Minute, 5*time.Second)
		if got := w.total() - at; got > 1 {
			t.Fatalf("%d asks in 10 minutes after the bound, want at most 1", got)
		}
		at = w.total()
	}
}
