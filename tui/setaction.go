package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// setAction is one action over the filtered set (C: re-close every
// UNCLOSED operation, X: cancel every INACTIVE one), confirmed once. The
// targets are fixed by id when the dialog opens; each is re-checked when
// the answer comes and again just before its call.
type setAction struct {
	kind    actionKind // actClose or actCancel
	flag    model.FlagKind
	targets []string // statement ids, in display order
	// skipped: flagged, but their client called within --inactivity-warn
	// (a slow reader still fetching rows looks UNCLOSED but is alive).
	skipped []string
	// unknown: targets whose client activity no source tells.
	unknown int
	clients []string // client application (user) of the targets, distinct
}

// setFlag is the flag a set action takes its targets by.
func setFlag(k actionKind) model.FlagKind {
	if k == actCancel {
		return model.FlagInactive
	}
	return model.FlagUnclosed
}

// askSet opens the confirmation of a set action over the rows the filter
// lists.
func (m *Model) askSet(k actionKind) {
	o := m.ops
	if o.filter.Text == "" {
		m.ctx.setStatus("a set action needs a filter (/, or enter on a Clients row): the set is what the filter lists", false)
		return
	}
	sa := &setAction{kind: k, flag: setFlag(k)}
	now, warn := m.ctx.snap.GeneratedAt, m.inactivityWarn()
	seen := map[string]bool{}
	for _, r := range o.rows {
		op := m.ctx.snap.Operations[r]
		if !op.HasFlag(sa.flag) || notApplicable(k, op) != "" {
			continue
		}
		if _, busy := m.ctx.busy[op.StatementID]; busy {
			continue
		}
		if op.ClientActivityKnown && now.Sub(op.ClientLastActivity) < warn {
			sa.skipped = append(sa.skipped, op.StatementID)
			continue
		}
		if !op.ClientActivityKnown {
			sa.unknown++
		}
		sa.targets = append(sa.targets, op.StatementID)
		c := clientName(op)
		if !seen[c] {
			seen[c] = true
			sa.clients = append(sa.clients, c)
		}
	}
	if len(sa.targets) == 0 {
		msg := fmt.Sprintf("no %s operation in the filtered set to %s", sa.flag, strings.ToLower(actionText[k].verb))
		if len(sa.skipped) > 0 {
			msg += fmt.Sprintf(" (%d skipped: their client called within %s)", len(sa.skipped), textfmt.Duration(warn))
		}
		m.ctx.setStatus(msg, false)
		return
	}
	m.confirm = &pendingAction{kind: k, set: sa}
}

func clientName(op *model.OperationView) string {
	app := op.ClientApplication
	if app == "" {
		app = model.UnknownClient
	}
	if op.User != "" {
		app += " (" + op.User + ")"
	}
	return app
}

// inactivityWarn is the threshold a set action skips recently active
// clients by: the engine's --inactivity-warn, or model's default.
func (m *Model) inactivityWarn() time.Duration {
	if d := m.ctx.opts.InactivityWarn; d > 0 {
		return d
	}
	return model.DefaultThresholds.InactivityWarn
}

// setPrompt is the set dialog's text: count, clients, first ids, what
// cannot be undone, what was skipped and what is unknown.
func (m *Model) setPrompt(sa *setAction) (head []string, effect string) {
	g := m.ctx.glyphs
	verb := actionText[sa.kind].verb
	n := len(sa.targets)
	noun := "operations"
	if n == 1 {
		noun = "operation"
	}
	head = append(head, fmt.Sprintf("%s %d %s %s of %s?", verb, n, sa.flag, noun, listFew(sa.clients, 2)))
	var ids []string
	for _, id := range sa.targets {
		ids = append(ids, shortID(id, g.Ellipsis))
	}
	head = append(head, "Ids: "+listFew(ids, 4))
	if len(sa.skipped) > 0 {
		var sk []string
		for _, id := range sa.skipped {
			sk = append(sk, shortID(id, g.Ellipsis))
		}
		head = append(head, fmt.Sprintf("Skipped %d: their client called within %s (alive, still reading): %s.",
			len(sa.skipped), textfmt.Duration(m.inactivityWarn()), listFew(sk, 3)))
	}
	if sa.unknown > 0 {
		head = append(head, fmt.Sprintf("Client activity unknown for %d of them (no server API tells; dbxtop proxy on the client's path would).", sa.unknown))
	}
	// The calls of the first target: through the proxy when it saw it.
	first := findView(m.ctx.snap.Operations, sa.targets[0])
	if sa.kind == actClose {
		_, closeCall := m.callNames(first)
		effect = "dbxtop sends " + closeCall + " for each, one after another, re-checking each first. A close cannot be undone: a client still reading loses its result."
	} else {
		cancelCall, _ := m.callNames(first)
		effect = "dbxtop sends " + cancelCall + " for each, re-checking each first: the statements stop on the server. A cancel cannot be undone."
	}
	return head, effect
}

// listFew is the first n items and how many more.
func listFew(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

// answerSet runs the set action on y; any other key answers No.
func (m *Model) answerSet(p *pendingAction, msg tea.KeyMsg) tea.Cmd {
	sa := p.set
	verb := actionText[sa.kind].verb
	if !key.Matches(msg, m.ctx.keys.Confirm) {
		m.ctx.setStatus(fmt.Sprintf("%s of %d operations: not done (answered No)", verb, len(sa.targets)), false)
		return nil
	}
	for _, id := range sa.skipped {
		m.logAction(id, fmt.Sprintf("%s (set) skipped: its client called within %s", verb, textfmt.Duration(m.inactivityWarn())))
	}
	var ids []string
	for _, id := range sa.targets {
		op := findView(m.ctx.snap.Operations, id)
		if why := notApplicable(sa.kind, op); why != "" || !op.HasFlag(sa.flag) {
			if why == "" {
				why = "is no longer " + string(sa.flag)
			}
			m.logAction(id, fmt.Sprintf("%s (set) not sent: the operation %s", verb, why))
			continue
		}
		ids = append(ids, id)
		m.ctx.busy[id] = actionText[sa.kind].progress + m.ctx.glyphs.Progress
	}
	m.ctx.setStatus(fmt.Sprintf("%s of %d operations%s", actionText[sa.kind].progress, len(ids), m.ctx.glyphs.Progress), false)
	m.logAction("", fmt.Sprintf("%s of %d %s operations requested by the operator (%d skipped)", verb, len(ids), sa.flag, len(sa.targets)-len(ids)+len(sa.skipped)))
	return m.runSet(sa.kind, sa.flag, ids, m.inactivityWarn())
}

// setProgressMsg reports one target of a set action; the next target's
// command follows it, so progress shows as it goes.
type setProgressMsg struct {
	done actionDoneMsg
	rest []string
	flag model.FlagKind
	warn time.Duration
}

// runSet acts on ids one at a time through the engine (never several
// calls at once: the workspace's rate limits are shared with clients).
// Each target is re-checked against the engine's state first.
func (m *Model) runSet(k actionKind, flag model.FlagKind, ids []string, warn time.Duration) tea.Cmd {
	if len(ids) == 0 {
		return nil
	}
	e, timeout := m.eng, m.ctx.opts.ActionTimeout
	id, rest := ids[0], ids[1:]
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		s := e.Snapshot()
		op := findView(s.Operations, id)
		why := notApplicable(k, op)
		switch {
		case why != "":
		case !op.HasFlag(flag):
			why = "is no longer " + string(flag)
		case op.ClientActivityKnown && s.GeneratedAt.Sub(op.ClientLastActivity) < warn:
			why = "has a client call within " + textfmt.Duration(warn) + " (alive)"
		}
		if why != "" {
			return setProgressMsg{done: actionDoneMsg{kind: k, id: id, skipped: true, why: why, elapsed: time.Since(start)}, rest: rest, flag: flag, warn: warn}
		}
		var err error
		if k == actCancel {
			err = e.Cancel(ctx, id)
		} else {
			err = e.Close(ctx, id)
		}
		return setProgressMsg{done: actionDoneMsg{kind: k, id: id, err: err, elapsed: time.Since(start)}, rest: rest, flag: flag, warn: warn}
	}
}

// setProgress records one target's outcome and starts the next.
func (m *Model) setProgress(msg setProgressMsg) tea.Cmd {
	m.actionDone(msg.done)
	if len(msg.rest) == 0 {
		m.ctx.setStatus(fmt.Sprintf("%s (set): done; each outcome is in Events", actionText[msg.done.kind].verb), false)
	} else {
		m.ctx.setStatus(fmt.Sprintf("%s (set): %d to go%s", actionText[msg.done.kind].verb, len(msg.rest), m.ctx.glyphs.Progress), false)
	}
	return m.runSet(msg.done.kind, msg.flag, msg.rest, msg.warn)
}
