package model

import (
	"fmt"
	"strings"
	"time"
)

// String is a one-line description of the error for details, logs and
// the Events view: call, kind, code, status, message, request id,
// attempts and elapsed time. It never contains credentials because
// ErrorInfo never holds them.
func (e ErrorInfo) String() string {
	var b strings.Builder
	if e.Call != "" {
		b.WriteString(e.Call)
		b.WriteString(": ")
	}
	if e.Kind != "" {
		b.WriteString(string(e.Kind))
	} else {
		b.WriteString("error")
	}
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " HTTP %d", e.HTTPStatus)
	}
	if e.ErrorCode != "" {
		b.WriteString(" " + e.ErrorCode)
	}
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

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
