package tui

import (
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
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
	e = cleanEvent(e)
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

// cleanEvent makes an event's server text safe to draw (textfmt); the
// engine's snapshot text is already clean, its events are not.
func cleanEvent(e model.Event) model.Event {
	e.StatementID = textfmt.Line(e.StatementID)
	e.Endpoint = textfmt.Line(e.Endpoint)
	e.Call = textfmt.Line(e.Call)
	e.Message = textfmt.Line(e.Message)
	e.RequestID = textfmt.Line(e.RequestID)
	e.Err = model.SanitizeError(e.Err)
	if e.Flag != nil {
		f := *e.Flag
		f.Detail = textfmt.Line(f.Detail)
		e.Flag = &f
	}
	return e
}
