package tui

import (
	"testing"

	"github.com/dbxtop/dbxtop/model"
)

// Frames, not events: a burst of events already waiting is one message
// (one Update, one render), not one per event; a burst larger than the
// engine's buffer takes a few; a closed channel ends the reader.
func TestEventsCoalescedIntoFrames(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	ch := make(chan model.Event, 2*maxFrameEvents)
	for i := range 3000 {
		ch <- model.Event{Kind: model.EventStateChange, Message: string(rune('a' + i%26))}
	}
	msg := waitEvent(ch, done)().(eventMsg)
	if !msg.ok || len(msg.evs) != 3000 {
		t.Fatalf("a burst of 3000 waiting events came as %d in one message (ok %v), want all 3000", len(msg.evs), msg.ok)
	}
	for i := range 5000 {
		ch <- model.Event{Kind: model.EventRetry, Message: string(rune('a' + i%26))}
	}
	first := waitEvent(ch, done)().(eventMsg)
	second := waitEvent(ch, done)().(eventMsg)
	if len(first.evs) != maxFrameEvents || len(second.evs) != 5000-maxFrameEvents {
		t.Errorf("5000 events: frames of %d and %d, want %d and %d", len(first.evs), len(second.evs), maxFrameEvents, 5000-maxFrameEvents)
	}
	ch <- model.Event{Kind: model.EventGone}
	close(ch)
	last := waitEvent(ch, done)().(eventMsg)
	if !last.ok || len(last.evs) != 1 {
		t.Errorf("the last event before close: %+v", last)
	}
	if end := waitEvent(ch, done)().(eventMsg); end.ok {
		t.Errorf("a closed channel gave %+v, want ok=false", end)
	}
	// Update takes a whole frame into the Events ring.
	m := New(newFakeEngine(fixtureSnapshot()), testOptions()).(*Model)
	m.Update(eventMsg{evs: msg.evs[:50], ok: true})
	if got := m.ctx.ring.len(); got != 50 {
		t.Errorf("ring holds %d events after a frame of 50", got)
	}
}
