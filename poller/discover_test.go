package poller

import (
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// Adoption follows what is new once (a listing may repeat a row),
// retires what is listed closed, schedules the rest for a poll now, and
// for what it follows already takes only the descriptive fields that
// changed, bringing a poll forward when the listing says it ended (once
// a poll answered, a poll says the state).
func TestAdoptFollowsNewAndRefreshesKnown(t *testing.T) {
	e := NewEngine(Options{Clock: newFakeClock()})
	now := e.clk.Now()
	row := func(id string, st model.State, sql string) sources.Discovered {
		return sources.Discovered{Op: model.Operation{StatementID: id, State: st, SQL: sql}}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	added := e.adopt([]sources.Discovered{
		row("b", model.StateRunning, "SELECT 1"),
		row("a", model.StateClosed, ""),
		row("b", model.StateRunning, "SELECT 1"), // repeated on the next page
	}, now)
	if len(added) != 2 || len(e.book.ops.ordered()) != 2 {
		t.Fatalf("added %v, following %d, want a and b once", ids(added), len(e.book.ops.ordered()))
	}
	a, b := e.book.ops.get("a"), e.book.ops.get("b")
	if !a.retired || a.idx >= 0 || b.retired || b.idx < 0 || b.next != stamp(now) {
		t.Fatalf("a retired %v (heap %d), b retired %v (heap %d, next %d), want a retired and b due now", a.retired, a.idx, b.retired, b.idx, b.next)
	}
	if b.ref.StatementID != "b" || b.op.FirstSeenAt != now || e.book.ops.countLive() != 1 {
		t.Fatalf("b: ref %+v first seen %s, %d live", b.ref, b.op.FirstSeenAt, e.book.ops.n)
	}
	e.sched.at(b, now.Add(time.Minute))
	b.op.LastPollOKAt = now // a poll answered: the listing no longer sets the state
	e.book.views.compare(now, e.out.emit)
	e.adopt([]sources.Discovered{row("b", model.StateFinished, "SELECT 2")}, now)
	if b.op.SQL != "SELECT 2" || !b.inChanged || b.next != stamp(now) {
		t.Fatalf("b after a listing saying it ended: SQL %q, waiting for a compare %v, next %d (want now %d)", b.op.SQL, b.inChanged, b.next, stamp(now))
	}
	if b.op.State != model.StateRunning {
		t.Fatalf("b's state %s: the poll brought forward tells, not the listing", b.op.State)
	}
	if err := e.book.ops.check(); err != nil {
		t.Fatal(err)
	}
}
