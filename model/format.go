package model

import (
	"fmt"
	"strings"
	"time"
)

// String is a one-line description of the error for reports and logs:
// call, kind, code, status, message, request id, attempts and elapsed
// time. It never contains credentials because ErrorInfo never holds them.
func (e ErrorInfo) String() string {
	var b strings.Builder
	if e.Call != "" {
		b.WriteString(e.Call)
		b.WriteString(": ")
	}
	kind := string(e.Kind)
	if kind == "" {
		kind = "error"
	}
	b.WriteString(e.classified(kind))
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	var extra []string
	if e.RequestID != "" {
		extra = append(extra, "request_id "+e.RequestID)
	}
	if e.Attempts > 0 {
		unit := "attempts"
		if e.Attempts == 1 {
			unit = "attempt"
		}
		extra = append(extra, fmt.Sprintf("%d %s", e.Attempts, unit))
	}
	if e.Elapsed > 0 {
		extra = append(extra, "after "+e.Elapsed.Round(time.Millisecond).String())
	}
	if len(extra) > 0 {
		b.WriteString(" (" + strings.Join(extra, ", ") + ")")
	}
	return b.String()
}

// Line is the error for one line of a screen, with everything an operator
// needs to report it, said once: the engine's messages often name the
// call and the request id already, and a message that starts with the
// kind does not get it twice ("transport: transport: …").
func (e ErrorInfo) Line() string {
	var b strings.Builder
	if e.Call != "" && !strings.HasPrefix(e.Message, e.Call) {
		b.WriteString(e.Call)
		b.WriteString(": ")
	}
	b.WriteString(e.classified(string(e.Kind)))
	if msg := strings.TrimPrefix(e.Message, string(e.Kind)+": "); msg != "" {
		b.WriteString(": " + msg)
	}
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " (%d attempt", e.Attempts)
		if e.Attempts > 1 {
			b.WriteString("s")
		}
		if e.Elapsed > 0 {
			fmt.Fprintf(&b, " in %s", e.Elapsed.Round(10*time.Millisecond))
		}
		b.WriteString(")")
	}
	if e.RequestID != "" && !strings.Contains(e.Message, e.RequestID) {
		b.WriteString(" request_id " + e.RequestID)
	}
	return b.String()
}

// LineWithoutID is Line without the request id, for views that show the
// id on a line of its own.
func (e ErrorInfo) LineWithoutID() string {
	e.RequestID = ""
	return e.Line()
}

// classified is what both forms say first: "kind HTTP 503 CODE".
func (e ErrorInfo) classified(kind string) string {
	if e.HTTPStatus != 0 {
		kind += fmt.Sprintf(" HTTP %d", e.HTTPStatus)
	}
	if e.ErrorCode != "" {
		kind += " " + e.ErrorCode
	}
	return kind
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
