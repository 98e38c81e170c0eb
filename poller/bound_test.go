package poller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// The ended operations followed are bounded: past the bound the closed
// ones (nothing to show) go first, then those no source can tell about,
// oldest end first; a flagged leak stays. What was dropped is counted in
// Health and the snapshot, said in an event, and not followed again when
// a listing shows it again.
func TestEndedOperationsAreBounded(t *testing.T) {
	w := newEndedWorkspace()
	clk0 := newFakeClock().Now()
	add := func(prefix string, n int, endedAgo time.Duration, open *bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := range n {
			id := fmt.Sprintf("%s%02d", prefix, i)
			w.ended[id] = clk0.Add(-endedAgo - time.Duration(i)*time.Second)
			if open != nil {
				w.open[id] = *open
			}
		}
	}
	yes, no := true, false
	add("leak", 5, time.Hour, &yes)        // old leaks: UNCLOSED on the first round
	add("closed", 10, 30*time.Minute, &no) // closed: retired, nothing to show
	h := startEngine(t, Options{Discoverer: w, Status: w, Thresholds: beliefThresholds, maxEnded: 20})
	h.run(10*time.Second, time.Second)
	for i := range 5 {
		if v := h.op(fmt.Sprintf("leak%02d", i)); !hasFlag(v, model.FlagUnclosed) {
			t.Fatalf("leak%02d not flagged UNCLOSED: %+v", i, v.Flags)
		}
	}
	if n := h.e.Health().NotFollowed; n != 0 {
		t.Fatalf("%d not followed under the bound", n)
	}

	// 15 more that no source can tell about: 30 ended, 10 over the bound,
	// and the 10 closed ones go.
	add("unknown", 15, 2*time.Minute, nil)
	h.run(10*time.Second, time.Second)
	snap := h.e.Snapshot()
	ids := map[string]bool{}
	for _, v := range snap.Operations {
		ids[v.StatementID] = true
	}
	for id := range ids {
		if strings.HasPrefix(id, "closed") {
			t.Errorf("%s (closed, nothing to show) still followed past the bound", id)
		}
	}
	if len(ids) != 20 || snap.Workspace.NotFollowed != 10 || h.e.Health().NotFollowed != 10 {
		t.Fatalf("%d followed, %d (snapshot) %d (Health) not followed; want 20 and 10", len(ids), snap.Workspace.NotFollowed, h.e.Health().NotFollowed)
	}
	var said bool
	for _, ev := range h.drain() {
		if ev.Kind == model.EventNotFollowed && strings.Contains(ev.Message, "10 ended operations no longer followed") &&
			strings.Contains(ev.Message, "at most 20 ended operations") {
			said = true
		}
	}
	if !said {
		t.Error("no not-followed event said how many were dropped and the bound")
	}

	// 5 more: the 5 oldest of those no source can tell about go, never a
	// flagged leak; what was dropped is not followed again though listed.
	calls := w.total()
	add("late", 5, time.Minute, nil)
	h.run(20*time.Second, time.Second)
	snap = h.e.Snapshot()
	ids = map[string]bool{}
	for _, v := range snap.Operations {
		ids[v.StatementID] = true
		if strings.HasPrefix(v.StatementID, "leak") && !hasFlag(v, model.FlagUnclosed) {
			t.Errorf("%s lost its UNCLOSED flag", v.StatementID)
		}
	}
	for i := range 5 {
		if !ids[fmt.Sprintf("leak%02d", i)] {
			t.Errorf("leak%02d (flagged) dropped while unflagged ones were followed", i)
		}
		if id := fmt.Sprintf("unknown%02d", 10+i); ids[id] {
			t.Errorf("%s (the oldest that cannot be told) still followed", id)
		}
	}
	if len(ids) != 20 || snap.Workspace.NotFollowed != 15 {
		t.Fatalf("%d followed, %d not followed; want 20 and 15", len(ids), snap.Workspace.NotFollowed)
	}
	w.mu.Lock()
	for id := range w.calls {
		if strings.HasPrefix(id, "closed") && w.calls[id] > 1 {
			t.Errorf("%s asked %d times: followed again after it was dropped", id, w.calls[id])
		}
	}
	w.mu.Unlock()
	if w.total() == calls {
		t.Fatal("no status call in 20 s: nothing was asked, nothing tested")
	}
}
