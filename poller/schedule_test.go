package poller

import (
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// A poll put off keeps its place until its old time, then is filed again
// by its new one; one brought forward moves at once.
func TestSchedulerPutOffAndBringForward(t *testing.T) {
	s := scheduler{lim: newLimiter(8)}
	t0 := time.Unix(1000, 0)
	a, b := testEntry("a", model.StateRunning), testEntry("b", model.StateRunning)
	s.at(a, t0.Add(time.Second))
	s.at(b, t0.Add(2*time.Second))
	s.at(a, t0.Add(3*time.Second)) // put off
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if en := s.popDue(t0.Add(time.Second)); en != nil {
		t.Fatalf("%s due at 1 s, want none (a was put off to 3 s)", en.op.StatementID)
	}
	if en := s.popDue(t0.Add(2 * time.Second)); en != b {
		t.Fatalf("due at 2 s: %v, want b", en)
	}
	s.at(a, t0.Add(2*time.Second)) // brought forward
	if en := s.popDue(t0.Add(2 * time.Second)); en != a {
		t.Fatalf("due at 2 s after a was brought forward: %v, want a", en)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
}

// The demand follows the rates of what is scheduled; a removed operation
// no longer counts.
func TestSchedulerDemand(t *testing.T) {
	s := scheduler{lim: newLimiter(8)}
	a, b := testEntry("a", model.StateRunning), testEntry("b", model.StateRunning)
	s.setRate(a, 0.5)
	s.setRate(b, 0.25)
	s.setRate(a, 1)
	if s.rateSum != 1.25 {
		t.Fatalf("demand %v, want 1.25", s.rateSum)
	}
	s.at(a, time.Unix(0, 0))
	s.remove(a)
	if s.rateSum != 0.25 || a.idx != -1 || len(s.heap) != 0 {
		t.Fatalf("after remove: demand %v, index %d, heap %d", s.rateSum, a.idx, len(s.heap))
	}
}

// The scheduler's check catches an entry filed while its poll is in
// flight, and a heap position that does not match.
func TestSchedulerCheckCatchesBrokenInvariants(t *testing.T) {
	s := scheduler{lim: newLimiter(8)}
	a := testEntry("a", model.StateRunning)
	s.at(a, time.Unix(0, 0))
	a.polling = true
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Fatalf("check = %v, want a filed while polled", err)
	}
	a.polling, a.idx = false, 3
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "index 3") {
		t.Fatalf("check = %v, want the wrong index", err)
	}
}
