package poller

import (
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Due closes are those whose time came and that are not in flight; the
// next time is the earliest of the others.
func TestCloseQueueDue(t *testing.T) {
	q := closeQueue{}
	t0 := time.Unix(1000, 0)
	mk := func(id string, at time.Duration, closing bool) *entry {
		en := testEntry(id, model.StateFinished)
		en.op.Close.NextTry, en.closing = t0.Add(at), closing
		q.add(en)
		return en
	}
	a := mk("a", 0, false)
	mk("b", 0, true) // in flight
	mk("c", 5*time.Second, false)
	mk("d", 3*time.Second, false)
	due, next := q.due(t0)
	if len(due) != 1 || due[0] != a || !next.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("due %v next %s, want [a] and +3s", ids(due), next)
	}
	q.remove(a)
	if a.queued || len(q) != 3 {
		t.Fatalf("after remove: queued %v, %d queued", a.queued, len(q))
	}
}
