package sim

import (
	"runtime"
	"testing"
	"time"
	"weak"
)

// statements runs n SELECT 1 on ss and closes each, as a pooled client
// does; it returns weak pointers to them, to see what is still held.
func statements(s *store, ss *session, n int) []weak.Pointer[operation] {
	out := make([]weak.Pointer[operation], 0, n)
	for i := 0; i < n; i++ {
		op := s.execute(ss, "SELECT 1", planStatement("SELECT 1", 0, 0), true, nil)
		s.withOp(op.guid, true, s.closeLocked)
		out = append(out, weak.Make(op))
	}
	return out
}

func alive(ps []weak.Pointer[operation]) int {
	runtime.GC()
	n := 0
	for _, p := range ps {
		if p.Value() != nil {
			n++
		}
	}
	return n
}

// A session that stays open for hours (a pooled client) must not keep
// the operations it closed once Retention has forgotten them: a soak of
// SELECT 1 grew the simulator's heap without bound.
func TestForgottenOperationsAreFreed(t *testing.T) {
	// The defaults outside the demo: Retention shorter than LeakTimeout, so
	// the idle session outlives what it ran.
	clk := NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	s := newStore(clk, 430*time.Second, 23*time.Minute, 10*time.Minute)
	ss := s.openSession("wh", "alice@example.com", "load", KindExternal, true)
	ops := statements(s, ss, 1000)
	clk.Advance(10*time.Minute + time.Second)
	s.reap()
	if n := alive(ops); n != 0 {
		t.Errorf("%d of 1000 closed operations still in memory after Retention (the session keeps them)", n)
	}
	if len(s.ops) != 0 || len(s.order) != 0 {
		t.Errorf("held %d operations, %d in history order, want none", len(s.ops), len(s.order))
	}
	if _, ok := s.session(ss.guid); !ok {
		t.Fatal("the open session was dropped")
	}
	// The session still closes what it has open.
	op := s.execute(ss, "SELECT sleep(60)", planStatement("SELECT sleep(60)", 0, 0), true, nil)
	s.closeSession(ss.guid, true)
	if st, open := state(s, op); open || st != "CANCELED" {
		t.Errorf("after CloseSession: %s open=%v, want CANCELED and closed", st, open)
	}
}

// Closed operations are bounded by count as well as by Retention: the
// oldest closed are forgotten first, open ones never.
func TestClosedOperationsAreCapped(t *testing.T) {
	s, clk := newTestStore()
	s.maxClosed = 500
	ss := s.openSession("wh", "alice@example.com", "load", KindExternal, true)
	var live []*operation
	for i := 0; i < 600; i++ {
		live = append(live, s.execute(ss, "SELECT sleep(600)", planStatement("SELECT sleep(600)", 0, 0), true, nil))
	}
	old := statements(s, ss, 1500)
	clk.Advance(time.Second)
	recent := statements(s, ss, 500)
	s.reap()
	if got, want := len(s.ops), 600+500; got != want {
		t.Errorf("held %d operations, want %d (600 open + the cap of 500 closed)", got, want)
	}
	if n := alive(old); n != 0 {
		t.Errorf("%d of the 1500 oldest closed operations still in memory", n)
	}
	if n := alive(recent); n != 500 {
		t.Errorf("%d of the 500 newest closed operations kept, want all", n)
	}
	for _, op := range live {
		if _, ok := s.lookupID(op.id); !ok {
			t.Fatalf("open operation %s forgotten by the cap", op.id)
		}
	}
	// History pages still walk what is held, newest first.
	rows, more := s.history(&historyQuery{max: 2000}, 0)
	if len(rows) != 1100 || more {
		t.Errorf("history lists %d rows (more=%v), want 1100", len(rows), more)
	}
	if len(s.closedQ) > 500 {
		t.Errorf("close queue holds %d entries, want at most the cap", len(s.closedQ))
	}
	// Closing the rest keeps the cap: the open ones, once closed, push out
	// the older closed ones.
	s.closeSession(ss.guid, true)
	s.reap()
	if len(s.ops) != 500 {
		t.Errorf("held %d operations after closing the session, want the cap of 500", len(s.ops))
	}
}
