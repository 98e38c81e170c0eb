package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
)

// snapMsg carries one snapshot and the poller's health, taken off the
// Update goroutine.
type snapMsg struct {
	snap   model.Snapshot
	health model.Health
	// rows is the display order computed in the command for order, so
	// sorting 100,000 operations never blocks the Update loop; Update
	// recomputes it only if the operator changed the order meanwhile.
	rows  rowOrder
	order orderSpec
}

// tickMsg asks for the next snapshot.
type tickMsg time.Time

// eventMsg is one frame's worth of engine events; ok is false once the
// channel is closed.
type eventMsg struct {
	evs []model.Event
	ok  bool
}

// fetch takes a snapshot in a command: the engine copies its state there,
// not in Update.
func (m *Model) fetch() tea.Cmd {
	e, order := m.eng, m.ops.orderSpec()
	return func() tea.Msg {
		s := e.Snapshot()
		return snapMsg{snap: s, health: e.Health(), order: order, rows: order.build(&s)}
	}
}

// tick schedules the next fetch. Only one fetch is ever outstanding: the
// next tick is armed when a snapshot arrives.
// The timer stops when Run ends (done), so no goroutine outlives the
// program by a refresh period.
func (m *Model) tick() tea.Cmd {
	d, done := m.ctx.screenRefresh(), m.done
	return func() tea.Msg {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case now := <-t.C:
			return tickMsg(now)
		case <-done:
			return nil
		}
	}
}

// Frames, not events: the engine can publish thousands of events a
// second (every state change at 100,000 operations), and Bubble Tea
// renders after every message. waitEvent therefore hands Update the
// events of one frame at a time: it blocks for the first, then gathers
// what arrives within frameEvery of it (at most maxFrameEvents), so
// events cause at most 10 renders a second however many there are.
const (
	frameEvery     = 100 * time.Millisecond
	maxFrameEvents = 4096 // the engine's buffer: one frame can drain it
)

// waitEvent reads one frame of engine events; Update re-arms it after
// each frame. done (closed by Run when the program ends) releases the
// reader so no goroutine outlives the program.
func waitEvent(ch <-chan model.Event, done <-chan struct{}) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		var evs []model.Event
		select {
		case ev, ok := <-ch:
			if !ok {
				return eventMsg{}
			}
			// Sized from what is queued: with churn a frame holds many
			// events, and growing the slice event by event is garbage.
			evs = make([]model.Event, 0, min(max(2*len(ch)+1, 16), maxFrameEvents))
			evs = append(evs, ev)
		case <-done:
			return eventMsg{}
		}
		// What is already queued is taken first, whatever the time: a
		// frame never leaves waiting events behind for the next one.
		drain := func() (open bool) {
			for len(evs) < maxFrameEvents {
				select {
				case ev, ok := <-ch:
					if !ok {
						return false
					}
					evs = append(evs, ev)
				default:
					return true
				}
			}
			return true
		}
		frame := time.NewTimer(frameEvery)
		defer frame.Stop()
		for drain() && len(evs) < maxFrameEvents {
			select {
			case ev, ok := <-ch:
				if !ok {
					return eventMsg{evs: evs, ok: true} // the closed channel is seen next time
				}
				evs = append(evs, ev)
			case <-frame.C:
				drain()
				return eventMsg{evs: evs, ok: true}
			case <-done:
				return eventMsg{evs: evs, ok: true}
			}
		}
		return eventMsg{evs: evs, ok: true}
	}
}
