package tui

import (
	"context"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
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
// acted on; the dialog is drawn from the target as it is now, and the
// answer re-checks it (recheck).
type pendingAction struct {
	kind actionKind
	id   string
	was  model.State // the target's state when the dialog opened
	// note says what changed since the dialog first opened, when the
	// answer found the first action no longer applies and offers this one.
	note string
	// set: an action over the filtered set (id and was are unused).
	set *setAction
}

// actionResult is the last outcome of an action on a row; the row shows
// it for resultTTL, then dbxtop's own close bookkeeping again.
type actionResult struct {
	text string
	at   time.Time
}

const resultTTL = time.Minute

// actionDoneMsg reports an action's outcome. skipped: the target no
// longer needed it when the command re-checked it (why says so), and the
// engine was not called.
type actionDoneMsg struct {
	kind    actionKind
	id      string
	err     error
	skipped bool
	why     string
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
	if why := notApplicable(k, op); why != "" {
		m.ctx.setStatus(fmt.Sprintf("%s %s", shortID(op.StatementID, m.ctx.glyphs.Ellipsis), why), false)
		return
	}
	m.confirm = &pendingAction{kind: k, id: op.StatementID, was: op.State}
	m.ops.scrollToCursor()
}

// notApplicable says why action k makes no sense on op now ("" when it
// does): asked when the dialog opens, when it is answered, and again by
// the command just before the engine is called.
func notApplicable(k actionKind, op *model.OperationView) string {
	switch {
	case op == nil:
		return "is gone (closed or reaped): nothing done"
	case op.Gone:
		return "is gone (closed or reaped): nothing done"
	case (k == actCancel || k == actCancelClose) && op.State.Terminal():
		// Nothing runs any more: cancel would only confuse. Closing is
		// what a finished-but-open operation needs.
		if stillOpen(op) {
			return fmt.Sprintf("is %s: nothing to cancel (c re-closes it)", op.State)
		}
		return fmt.Sprintf("is %s: nothing to cancel", op.State)
	case k == actClose && (op.State == model.StateClosed || op.Close.State == model.CloseClosed || op.Open != nil && !*op.Open):
		return "is already closed: nothing to re-close"
	}
	return ""
}

// stillOpen: the server may still hold the finished operation, so a
// close is what it needs.
func stillOpen(op *model.OperationView) bool {
	return op.State != model.StateClosed && op.Close.State != model.CloseClosed && (op.Open == nil || *op.Open) && !op.Gone
}

// prompt is the dialog's text, built from the target as it is now: what
// will be done to which operation (id, state, age, user, warehouse, its
// SQL on one clean line), and the effect; w is the text width.
func (m *Model) prompt(p *pendingAction, w int) (head []string, effect string) {
	if p.set != nil {
		return m.setPrompt(p.set)
	}
	g := m.ctx.glyphs
	t := actionText[p.kind]
	op := findView(m.ctx.snap.Operations, p.id)
	sid := shortID(p.id, g.Ellipsis)
	if op == nil {
		return []string{fmt.Sprintf("%s %s? It is gone (closed or reaped).", t.verb, sid)}, ""
	}
	age := "age ?"
	if !op.StartedAt.IsZero() {
		age = "age " + textfmt.Duration(max(m.ctx.snap.GeneratedAt.Sub(op.StartedAt), 0))
	}
	state := string(op.State)
	if op.Gone {
		state = "GONE"
	}
	head = append(head, fmt.Sprintf("%s %s on %s (%s, %s, %s)?", t.verb, sid, textfmt.OrDash(op.WarehouseID), textfmt.OrDash(op.User), state, age))
	head = append(head, ansi.Truncate("SQL: "+oneLine(textfmt.Line(op.SQL)), w, g.Ellipsis))
	if p.note != "" {
		head = append(head, p.note)
	}
	if op.State != p.was {
		head = append(head, fmt.Sprintf("Now %s (it was %s when this dialog opened).", state, p.was))
	}
	return head, m.effect(p.kind, op)
}

// effect is what the action sends and what happens then.
func (m *Model) effect(k actionKind, op *model.OperationView) string {
	cancelCall, closeCall := m.callNames(op)
	switch {
	case k == actAdopt && op.State.Terminal():
		return "It has already finished: dbxtop closes it on the server now (" + closeCall + ")."
	case k == actAdopt:
		return "dbxtop will close another client's statement: it sends " + closeCall + " as soon as it finishes. A close cannot be undone."
	case k == actClose:
		return "dbxtop sends " + closeCall + " now; if that fails it retries with backoff. A close cannot be undone."
	case k == actCancel:
		// An orphan dbxtop cancels stays open (UNCLOSED) unless someone
		// closes it, and its client is gone: offer both.
		return "dbxtop sends " + cancelCall + "; the statement stops on the server. " +
			"y: cancel only (it stays open until its client closes it); c: cancel and close (dbxtop then sends " + closeCall + ")."
	}
	return actionText[k].effect
}

// answerConfirm: only the Confirm key (y) runs the action; every other key,
// enter included, answers No. The target is checked again first: an
// operation that finished while the dialog was open is not cancelled, and
// the dialog says so and offers what still makes sense.
func (m *Model) answerConfirm(msg tea.KeyMsg) tea.Cmd {
	p := m.confirm
	m.confirm = nil
	if msg.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	if p.set != nil {
		return m.answerSet(p, msg)
	}
	t := actionText[p.kind]
	sid := shortID(p.id, m.ctx.glyphs.Ellipsis)
	kind := p.kind
	if p.kind == actCancel && msg.String() == "c" {
		kind = actCancelClose
	} else if !key.Matches(msg, m.ctx.keys.Confirm) {
		m.ctx.setStatus(fmt.Sprintf("%s %s: not done (answered No)", t.verb, sid), false)
		return nil
	}
	op := findView(m.ctx.snap.Operations, p.id)
	if why := notApplicable(kind, op); why != "" {
		m.logAction(p.id, fmt.Sprintf("%s not sent: the operation %s", t.verb, why))
		if (kind == actCancel || kind == actCancelClose) && op != nil && !op.Gone && stillOpen(op) {
			// It finished meanwhile but may still be open: offer the close.
			m.confirm = &pendingAction{kind: actClose, id: p.id, was: op.State,
				note: fmt.Sprintf("Not cancelled: it finished (%s) while this dialog was open.", op.State)}
			return nil
		}
		m.ctx.setStatus(fmt.Sprintf("%s %s: not sent, it %s", t.verb, sid, why), false)
		return nil
	}
	return m.runAction(kind, p.id)
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
		// The engine's state now, not the last frame's: the statement may
		// have finished since the answer.
		s := e.Snapshot()
		if why := notApplicable(k, findView(s.Operations, id)); why != "" {
			return actionDoneMsg{kind: k, id: id, skipped: true, why: why, elapsed: time.Since(start)}
		}
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
	if msg.skipped {
		m.ctx.results[msg.id] = actionResult{t.short + " skipped", m.ctx.opts.Now()}
		m.ctx.setStatus(fmt.Sprintf("%s %s: not sent, it %s", t.verb, sid, msg.why), false)
		m.logAction(msg.id, fmt.Sprintf("%s not sent: the operation %s", t.verb, msg.why))
		return
	}
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

// findView is the operation with id in ops (the one the server still
// has, when several), or nil.
func findView(ops []*model.OperationView, id string) *model.OperationView {
	if i := findOp(ops, id); i >= 0 {
		return ops[i]
	}
	return nil
}
