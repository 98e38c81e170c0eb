package poller

import (
	"sync"
	"sync/atomic"

	"github.com/dbxtop/dbxtop/model"
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
