package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/dbxtop/dbxtop/model"
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
		// The request id gets a line of its own so a long message never
		// cuts it: it is what Databricks support asks for.
		id := eventRequestID(e)
		keep := eventLines
		if id != "" {
			keep--
		}
		parts := wrapWords(eventText(e), msgW)
		if len(parts) > keep {
			parts = parts[:keep]
			parts[keep-1] = ansi.Truncate(parts[keep-1], msgW-ansi.StringWidth(g.Ellipsis), "") + g.Ellipsis
		}
		if id != "" {
			if last := parts[len(parts)-1]; ansi.StringWidth(last)+len("  request_id ")+len(id) <= msgW {
				parts[len(parts)-1] = last + "  request_id " + id
			} else {
				parts = append(parts, "req "+id) // fits the 80-column message area
			}
		}
		style := lipgloss.NewStyle()
		switch {
		case e.Kind == model.EventGiveUp || e.Kind == model.EventCloseFailed ||
			(e.Flag != nil && e.Flag.Severity == "critical" && e.Kind == model.EventFlagRaised):
			style = st.Crit
		case e.Kind == model.EventRetry || e.Kind == model.EventFlagRaised:
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
func eventText(e model.Event) string {
	s := e.Message
	if e.Call != "" && e.Err == nil {
		s = e.Call + ": " + s
	}
	if e.Flag != nil && !strings.Contains(s, string(e.Flag.Kind)) {
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
		s += errorLineNoID(e.Err)
	}
	return s
}

// eventRequestID is the event's request id (or its error's) unless the
// message already carries it.
func eventRequestID(e model.Event) string {
	id := e.RequestID
	if id == "" && e.Err != nil {
		id = e.Err.RequestID
	}
	if id == "" || strings.Contains(e.Message, id) {
		return ""
	}
	return id
}
