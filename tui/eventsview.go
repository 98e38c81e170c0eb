package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/poller"
)

// eventsView lists engine and operator events, newest first: time, kind,
// operation (or endpoint), message and request id. A long message wraps
// onto at most eventLines lines so its request id stays readable.
func (m *Model) eventsView() []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	n := m.bodyHeight()
	out := []string{st.ColHead.Render(fmt.Sprintf("  %-8s  %-12s %-10s %s", "TIME", "KIND", "TARGET", "MESSAGE"))}
	if m.ring.len() == 0 {
		return append(out, st.Dim.Render("  no events yet"))
	}
	const prefixW = 2 + 8 + 2 + 12 + 1 + 10 + 1
	msgW := max(20, m.ctx.width-prefixW)
	for i := m.evOffset; i < m.ring.len() && len(out) < n; i++ {
		e := m.ring.at(i)
		target := shortID(e.StatementID, g.Ellipsis)
		if target == "" {
			target = e.Endpoint
		}
		msg := eventText(e)
		if id := eventRequestID(e); id != "" {
			msg += "  request_id " + id
		}
		parts := strings.Split(ansi.Wrap(msg, msgW, " "), "\n")
		if len(parts) > eventLines {
			parts = parts[:eventLines]
			parts[eventLines-1] = ansi.Truncate(parts[eventLines-1], msgW-1, "") + g.Ellipsis
		}
		style := lipgloss.NewStyle()
		switch {
		case e.Kind == poller.EventGiveUp || e.Kind == poller.EventCloseFailed ||
			(e.Flag != nil && e.Flag.Severity == "critical" && e.Kind == poller.EventFlagRaised):
			style = st.Crit
		case e.Kind == poller.EventRetry || e.Kind == poller.EventFlagRaised:
			style = st.Warn
		}
		for j, p := range parts {
			line := strings.Repeat(" ", prefixW) + p
			if j == 0 {
				line = fmt.Sprintf("  %s  %-12s %s %s", e.At.UTC().Format("15:04:05"), e.Kind, fit(target, 10, g.Ellipsis), p)
			}
			out = append(out, style.Render(line))
		}
	}
	return out
}

// eventLines bounds how many lines one event may take.
const eventLines = 3

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

// eventRequestID is the event's request id unless its text already
// carries it (errorLine prints the error's).
func eventRequestID(e poller.Event) string {
	id := e.RequestID
	if id == "" || strings.Contains(e.Message, id) || (e.Err != nil && e.Err.RequestID == id) {
		return ""
	}
	return id
}
