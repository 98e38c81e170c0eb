package tui

import (
	"context"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
)

// actionKind is a mutating row action. Each one is confirmed first and
// runs as a command that reports an actionDoneMsg.
type actionKind int

const (
	actAdopt actionKind = iota
	actClose
	actCancel
	actCancelClose // cancel, then adopt: dbxtop closes it once it stops
)

// actionText is what an action says: the confirmation verb, what will
// happen, the progress word, and the result.
var actionText = [...]struct{ verb, effect, progress, done, short string }{
	actAdopt:       {"Adopt", "dbxtop will close it on the server as soon as it finishes.", "adopting", "adopted: dbxtop closes it when it finishes", "adopt"},
	actClose:       {"Re-close", "dbxtop sends CloseOperation now; if that fails it retries with backoff.", "closing", "closed", "close"},
	actCancel:      {"Cancel", "The statement will stop on the server.", "canceling", "cancel sent", "cancel"},
	actCancelClose: {"Cancel and close", "The statement stops, then dbxtop closes it.", "canceling", "cancel sent; dbxtop closes it once it stops", "cancel+close"},
}

// callNames says which calls an action really sends, for the dialog:
// Thrift (the simulator) or the Statement Execution API (a workspace).
func (m *Model) callNames(op *model.OperationView) (cancel, close string) {
	if op != nil && op.Proxy != nil {
		// dbxtop --proxy: the proxy that saw it acts with the real handle.
		return "CancelOperation (through dbxtop proxy, the real handle)", "CloseOperation (through dbxtop proxy, the real handle)"
	}
	if m.ctx.opts.ActionPath == "thrift" {
		return "CancelOperation (Thrift)", "CloseOperation (Thrift)"
	}
	return "CancelExecution (POST /api/2.0/sql/statements/{id}/cancel)", "statement close (DELETE /api/2.0/sql/statements/{id})"
}

// pendingAction is an action waiting for its confirmation. It names its
// target by id, so a refresh that reorders rows cannot change what is
// acted on.
type pendingAction struct {
	kind   actionKind
	id     string
	prompt string
}

// actionResult is the last outcome of an action on a row; the row shows
// it for resultTTL, then dbxtop's own close bookkeeping again.
type actionResult struct {
	text string
	at   time.Time
}

const resultTTL = time.Minute

// actionDoneMsg reports an action's outcome.
type actionDoneMsg struct {
	kind    actionKind
	id      string
	err     error
	elapsed time.Duration
}

// askConfirm opens the confirmation for the selected operation.
func (m *Model) askConfirm(k actionKind) {
	op := m.selected()
	if op == nil {
		m.ctx.setStatus("no operation selected", false)
		return
	}
	if _, busy := m.ctx.busy[op.StatementID]; busy {
		m.ctx.setStatus(fmt.Sprintf("%s: an action is already running", shortID(op.StatementID, m.ctx.glyphs.Ellipsis)), false)
		return
	}
	t := actionText[k]
	effect := t.effect
	cancelCall, closeCall := m.callNames(op)
	switch {
	case k == actCancel && op.State.Terminal():
		// Nothing runs any more: cancel would only confuse. Closing is
		// what a finished-but-open operation needs.
		m.ctx.setStatus(fmt.Sprintf("%s is %s: nothing to cancel (c re-closes it)", shortID(op.StatementID, m.ctx.glyphs.Ellipsis), op.State), false)
		return
	case k == actAdopt && op.State.Terminal():
		effect = "It has already finished: dbxtop closes it on the server now (" + closeCall + ")."
	case k == actAdopt:
		effect = "dbxtop sends " + closeCall + " as soon as it finishes."
	case k == actClose:
		effect = "dbxtop sends " + closeCall + " now; if that fails it retries with backoff."
	case k == actCancel:
		// An orphan dbxtop cancels stays open (UNCLOSED) unless someone
		// closes it, and its client is gone: offer both.
		effect = "dbxtop sends " + cancelCall + "; the statement stops on the server. " +
			"y: cancel only (it stays open until its client closes it); c: cancel and close (dbxtop then sends " + closeCall + ")."
	}
	answer := "[y/N]"
	if k == actCancel {
		answer = "[y/c/N]"
	}
	m.confirm = &pendingAction{
		kind: k,
		id:   op.StatementID,
		prompt: fmt.Sprintf("%s %s on %s (%s, %s)? %s %s", t.verb,
			shortID(op.StatementID, m.ctx.glyphs.Ellipsis), op.WarehouseID, op.User, op.State, effect, answer),
	}
}

// answerConfirm: only the Confirm key (y) runs the action; every other key,
// enter included, answers No.
func (m *Model) answerConfirm(msg tea.KeyMsg) tea.Cmd {
	p := m.confirm
	m.confirm = nil
	if msg.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	t := actionText[p.kind]
	if p.kind == actCancel && msg.String() == "c" {
		return m.runAction(actCancelClose, p.id)
	}
	if !key.Matches(msg, m.ctx.keys.Confirm) {
		m.ctx.setStatus(fmt.Sprintf("%s %s: not done (answered No)", t.verb, shortID(p.id, m.ctx.glyphs.Ellipsis)), false)
		return nil
	}
	return m.runAction(p.kind, p.id)
}

// runAction marks the row busy, logs the start, and calls the engine in a
// command bounded by ActionTimeout.
func (m *Model) runAction(k actionKind, id string) tea.Cmd {
	t := actionText[k]
	progress := t.progress + m.ctx.glyphs.Progress
	m.ctx.busy[id] = progress
	delete(m.ctx.results, id)
	m.ctx.setStatus(fmt.Sprintf("%s %s", progress, shortID(id, m.ctx.glyphs.Ellipsis)), false)
	m.logAction(id, fmt.Sprintf("%s requested by the operator", t.verb))
	e, timeout := m.eng, m.ctx.opts.ActionTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		var err error
		switch k {
		case actAdopt:
			err = e.Adopt(ctx, id)
		case actClose:
			err = e.Close(ctx, id)
		case actCancel:
			err = e.Cancel(ctx, id)
		case actCancelClose:
			if err = e.Cancel(ctx, id); err == nil {
				err = e.Adopt(ctx, id)
			}
		}
		return actionDoneMsg{kind: k, id: id, err: err, elapsed: time.Since(start)}
	}
}

// actionDone shows the outcome in the row, the status line and Events.
// A refusal (read-only engine, unknown operation) is shown like any other
// error: the engine's message says why.
func (m *Model) actionDone(msg actionDoneMsg) {
	delete(m.ctx.busy, msg.id)
	t := actionText[msg.kind]
	sid := shortID(msg.id, m.ctx.glyphs.Ellipsis)
	if msg.err != nil {
		m.ctx.results[msg.id] = actionResult{t.short + " failed", m.ctx.opts.Now()}
		m.ctx.setStatus(fmt.Sprintf("%s %s failed after %s: %v", t.verb, sid, msg.elapsed.Round(time.Millisecond), msg.err), true)
		m.logAction(msg.id, fmt.Sprintf("%s failed: %v", t.verb, msg.err))
		return
	}
	m.ctx.results[msg.id] = actionResult{t.short + " ok", m.ctx.opts.Now()}
	m.ctx.setStatus(fmt.Sprintf("%s %s: %s", t.verb, sid, t.done), false)
	m.logAction(msg.id, fmt.Sprintf("%s: %s", t.verb, t.done))
}

// logAction records an operator action in the Events view; the engine
// logs its own side.
func (m *Model) logAction(id, text string) {
	m.ctx.ring.push(model.Event{At: m.ctx.opts.Now(), Kind: model.EventAction, StatementID: id, Message: text})
}
