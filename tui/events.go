package tui

import (
	"github.com/dbxtop/dbxtop/model"
)

// ring keeps the newest eventRing events; older ones fall off. Reading is
// newest first, which is how the Events view shows them.
type ring struct {
	buf   []model.Event
	next  int
	count int
}

func newRing(n int) *ring { return &ring{buf: make([]model.Event, n)} }

func (r *ring) push(e model.Event) {
	e = model.SanitizeEvent(e)
	r.buf[r.next] = e
	r.next = (r.next + 1) % len(r.buf)
	if r.count < len(r.buf) {
		r.count++
	}
}

func (r *ring) len() int { return r.count }

// at returns the i-th newest event (0 = newest).
func (r *ring) at(i int) model.Event {
	return r.buf[(r.next-1-i+2*len(r.buf))%len(r.buf)]
}

// newest returns up to n events, newest first, optionally only those of
// one operation (the detail view's history).
func (r *ring) newest(n int, statementID string) []model.Event {
	out := make([]model.Event, 0, min(n, r.count))
	for i := 0; i < r.count && len(out) < n; i++ {
		e := r.at(i)
		if statementID == "" || e.StatementID == statementID {
			out = append(out, e)
		}
	}
	return out
}
