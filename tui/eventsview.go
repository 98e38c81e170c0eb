package tui

import (
	"fmt"

	"github.com/dbxtop/dbxtop/poller"
)

// eventsView lists engine and operator events, newest first: time, kind,
// operation (or endpoint), message and request id.
func (m *Model) eventsView() []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	n := m.bodyHeight() - 1
	// Wide enough: the request id gets its own column (whole: it is what
	// Databricks support asks for); narrower, it follows the message.
	idCol := m.ctx.width >= 120
	head := fmt.Sprintf("  %-8s  %-12s %-10s ", "TIME", "KIND", "TARGET")
	if idCol {
		head += fmt.Sprintf("%-36s ", "REQUEST ID")
	}
	out := []string{st.ColHead.Render(head + "MESSAGE")}
	if m.ring.len() == 0 {
		return append(out, st.Dim.Render("  no events yet"))
	}
	for i := m.evOffset; i < m.ring.len() && len(out) <= n; i++ {
		e := m.ring.at(i)
		target := shortID(e.StatementID, g.Ellipsis)
		if target == "" {
			target = e.Endpoint
		}
		msg, id := eventText(e), e.RequestID
		if id == "" && e.Err != nil {
			id = e.Err.RequestID
		}
		line := fmt.Sprintf("  %s  %-12s %s ", e.At.UTC().Format("15:04:05"), e.Kind, fit(target, 10, g.Ellipsis))
		switch {
		case idCol:
			line += fit(id, 36, "") + " " + msg
		case id != "":
			line += msg + "  request_id " + id
		default:
			line += msg
		}
		switch {
		case e.Kind == poller.EventGiveUp || e.Kind == poller.EventCloseFailed ||
			(e.Flag != nil && e.Flag.Severity == "critical" && e.Kind == poller.EventFlagRaised):
			line = st.Crit.Render(line)
		case e.Kind == poller.EventRetry || e.Kind == poller.EventFlagRaised:
			line = st.Warn.Render(line)
		}
		out = append(out, line)
	}
	return out
}

// eventText is an event's message with its call, flag and error.
func eventText(e poller.Event) string {
	s := e.Message
	if e.Call != "" && e.Err == nil {
		s = e.Call + ": " + s
	}
	if e.Flag != nil {
		f := string(e.Flag.Kind) + " (" + string(e.Flag.Severity) + ")"
		if e.Flag.Detail != "" {
			f += " " + e.Flag.Detail
		}
		if s == "" {
			s = f
		} else {
			s += ": " + f
		}
	}
	if e.Err != nil {
		if s != "" {
			s += ": "
		}
		s += errorLine(e.Err)
	}
	return s
}

// eventRequestID is the event's request id, from the event or its error,
// unless the error text already carries it.
func eventRequestID(e poller.Event) string {
	if e.RequestID != "" {
		if e.Err != nil && e.Err.RequestID == e.RequestID {
			return "" // errorLine already printed it
		}
		return e.RequestID
	}
	return ""
}
