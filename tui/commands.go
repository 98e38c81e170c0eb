package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// snapMsg carries one snapshot and the poller's health, taken off the
// Update goroutine.
type snapMsg struct {
	snap   model.Snapshot
	health poller.Health
	// rows is the display order computed in the command for order, so
	// sorting 100,000 operations never blocks the Update loop; Update
	// recomputes it only if the operator changed the order meanwhile.
	rows  []int
	order orderSpec
}

// tickMsg asks for the next snapshot.
type tickMsg time.Time

// eventMsg is one engine event; ok is false once the channel is closed.
type eventMsg struct {
	ev model.Event
	ok bool
}

// fetch takes a snapshot in a command: the engine copies its state there,
// not in Update.
func (m *Model) fetch() tea.Cmd {
	e, order := m.eng, m.ops.orderSpec()
	return func() tea.Msg {
		s := e.Snapshot()
		return snapMsg{snap: s, health: e.Health(), order: order, rows: order.build(s.Operations)}
	}
}

// tick schedules the next fetch. Only one fetch is ever outstanding: the
// next tick is armed when a snapshot arrives.
// The timer stops when Run ends (done), so no goroutine outlives the
// program by a refresh period.
func (m *Model) tick() tea.Cmd {
	d, done := m.ctx.opts.Refresh, m.done
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

// waitEvent reads one engine event; Update re-arms it after each one, so
// the engine's channel feeds the program one message at a time.
// done (closed by Run when the program ends) releases the reader so no
// goroutine outlives the program.
func waitEvent(ch <-chan model.Event, done <-chan struct{}) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case ev, ok := <-ch:
			return eventMsg{ev: ev, ok: ok}
		case <-done:
			return eventMsg{}
		}
	}
}
