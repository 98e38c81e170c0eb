package poller

import (
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// SetRefresh (the TUI's + and -) changes the discovery period at run
// time, no shorter than model.MinRefresh.
func TestSetRefreshChangesTheDiscoveryPeriod(t *testing.T) {
	w := newMemWorkspace(50)
	w.set(opID(0), model.StateRunning)
	h := startEngine(t, Options{Discoverer: w, Status: w, Refresh: 5 * time.Second})
	if got := h.e.Refresh(); got != 5*time.Second {
		t.Fatalf("Refresh() = %s, want the option's 5s", got)
	}
	count := func(d time.Duration) int {
		d0, _, _ := w.counts()
		h.run(d, 100*time.Millisecond)
		d1, _, _ := w.counts()
		return d1 - d0
	}
	if n := count(60 * time.Second); n < 11 || n > 13 {
		t.Fatalf("%d discoveries in 60 s at 5s, want ~12", n)
	}
	h.e.SetRefresh(time.Second)
	h.settle()
	if got := h.e.Refresh(); got != time.Second {
		t.Fatalf("Refresh() = %s after SetRefresh(1s)", got)
	}
	if n := count(60 * time.Second); n < 58 || n > 62 {
		t.Errorf("%d discoveries in 60 s at 1s, want ~60", n)
	}
	h.e.SetRefresh(time.Nanosecond)
	if got := h.e.Refresh(); got != model.MinRefresh {
		t.Errorf("SetRefresh(1ns) gave %s, want the floor %s", got, model.MinRefresh)
	}
}
