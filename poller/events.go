package poller

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// emitter is an event stream that never blocks its sender: when the
// buffer is full the oldest event is dropped, and counted, to make room.
// A slow reader loses old news; it never stalls a poller.
type emitter struct {
	ch      chan model.Event
	mu      sync.Mutex // serialises sends: drop-then-send is two steps
	dropped atomic.Int64
}

func newEmitter() *emitter { return &emitter{ch: make(chan model.Event, 4096)} }

func (m *emitter) emit(ev model.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		select {
		case m.ch <- ev:
			return
		default:
		}
		select {
		case <-m.ch:
			m.dropped.Add(1)
		default:
		}
	}
}

// observe turns the policy's reports into events and per-operation counters.
func (e *Engine) observe(r retry.Report) {
	info := retry.ErrorInfoOf(r.Err)
	if r.GaveUp != nil {
		info = retry.ErrorInfoOf(r.GaveUp)
	}
	e.mu.Lock()
	now := e.clk.Now()
	en := e.book.get(r.Call.OpID)
	if r.GaveUp == nil && en != nil && r.Call.Name == CallStatus {
		e.book.retried(en)
	}
	if r.GaveUp == nil && info != nil {
		e.hs.lastRetry = info
	}
	e.mu.Unlock()
	ev := model.Event{At: now, StatementID: r.Call.OpID, Call: r.Call.Name, Err: info, RequestID: info.RequestID}
	if en == nil {
		ev.StatementID = ""
		if r.Call.Name == CallProbe {
			ev.Endpoint = r.Call.OpID
		}
	}
	if r.GaveUp != nil {
		if r.GaveUp.Kind == model.KindCanceled {
			return // shutdown or the caller's choice, not news
		}
		if errors.Is(r.Err, sources.ErrHandleGone) {
			return // an answer, reported by the caller as gone or closed
		}
		if r.Call.Name == CallProbe && r.GaveUp.Kind == model.KindPermanent {
			// A full endpoint answering the probe is the probe's purpose:
			// the capacity round reports it once, when it changes.
			return
		}
		ev.Kind, ev.Message = model.EventGiveUp, r.GaveUp.Error()
		e.log(slog.LevelWarn, "gave up: "+ev.Message, callAttrs(r.Call, r.GaveUp.Attempts)...)
	} else {
		ev.Kind = model.EventRetry
		ev.Message = fmt.Sprintf("attempt %d failed (%s); retrying in %s: %s", r.Attempt, r.Decision.Reason, textfmt.Elapsed(r.Wait), retry.Describe(r.Err))
		level := slog.LevelInfo
		if errors.Is(r.Err, syscall.ECONNREFUSED) {
			level = slog.LevelWarn // nothing listens: the host, the port or a proxy is wrong
		}
		e.log(level, "retrying: "+ev.Message, callAttrs(r.Call, r.Attempt)...)
	}
	e.out.emit(ev)
}

// callAttrs are a call's log attributes.
func callAttrs(c retry.Call, attempt int) []slog.Attr {
	a := []slog.Attr{slog.String("call", c.Name), slog.Int("attempt", attempt)}
	if c.OpID != "" {
		a = append(a, slog.String("operation", c.OpID))
	}
	return a
}
