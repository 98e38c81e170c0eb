package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FormatDuration renders a duration the way an operator reads it in a
// table cell or flag detail: whole seconds, at most two units
// ("45s", "1m12s", "2h05m", "3d04h"). Negative durations get a minus sign.
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	s := int64((d + time.Second/2) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, (s%86400)/3600)
	}
}

// FormatCount renders a row count with thousands separators (1,234,567).
func FormatCount(n int64) string {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-(n + 1)) + 1 // safe for math.MinInt64
	}
	digits := strconv.FormatUint(u, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

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
