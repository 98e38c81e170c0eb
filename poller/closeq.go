package poller

import "time"

// closeQueue holds the operations whose close dbxtop owes (adopted, or
// re-closed by the operator) until a close succeeds or the server says
// the handle is gone. It is small (operations an operator chose) and
// scanned each loop turn. Part of the ledger, under its lock.
type closeQueue map[string]*entry

// add queues en; its op.Close.NextTry says when to try.
func (q closeQueue) add(en *entry) {
	en.queued = true
	q[en.op.StatementID] = en
}

// remove takes en out of the queue.
func (q closeQueue) remove(en *entry) {
	if en.queued {
		en.queued = false
		delete(q, en.op.StatementID)
	}
}

// due lists the queued closes whose time came and that are not in
// flight, and returns when the next of the others is (zero: none).
func (q closeQueue) due(now time.Time) (due []*entry, next time.Time) {
	for _, en := range q {
		switch at := en.op.Close.NextTry; {
		case en.closing:
		case !at.After(now):
			due = append(due, en)
		case next.IsZero() || at.Before(next):
			next = at
		}
	}
	return due, next
}
