package model

import (
	"fmt"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/textfmt"
)

// reapedMessage is the part of the server's inactivity-timeout error that
// identifies a reaped orphan ("Query has been timed out due to inactivity.").
const reapedMessage = "timed out due to inactivity"

// leakCriticalFactor × LeakAfter turns UNCLOSED critical.
const leakCriticalFactor = 5

// WithDefaults fills zero thresholds with DefaultThresholds, so that the
// zero Thresholds value behaves like the command line's defaults.
func (t Thresholds) WithDefaults() Thresholds {
	if t.InactivityWarn <= 0 {
		t.InactivityWarn = DefaultThresholds.InactivityWarn
	}
	if t.ServerIdleTimeout <= 0 {
		t.ServerIdleTimeout = DefaultThresholds.ServerIdleTimeout
	}
	if t.LeakAfter <= 0 {
		t.LeakAfter = DefaultThresholds.LeakAfter
	}
	if t.ServerLeakTimeout <= 0 {
		t.ServerLeakTimeout = DefaultThresholds.ServerLeakTimeout
	}
	return t
}

// idleCritical is the silence after which INACTIVE/STALE become critical:
// 80 % of the server idle timeout, when the reaper is close enough that an
// operator must act now. Integer arithmetic (the ceiling of 4/5 of it) so
// the boundary is exact to the nanosecond.
func (t Thresholds) idleCritical() time.Duration {
	q, r := t.ServerIdleTimeout/5, t.ServerIdleTimeout%5
	return 4*q + (4*r+4)/5
}

// idleSeverity grades a period of silence (client inactivity, or dbxtop's
// own failed polls): warning from InactivityWarn, critical from 80 % of
// the server idle timeout. The flag is raised at whichever comes first,
// so a generous --inactivity-warn never hides an imminent reap.
func (t Thresholds) idleSeverity(silence time.Duration) Severity {
	switch {
	case silence >= t.idleCritical():
		return SeverityCritical
	case silence >= t.InactivityWarn:
		return SeverityWarning
	}
	return SeverityNone
}

// InactiveFor is how long the owning client has not called the server,
// or nil when the source cannot tell. Clock skew (activity "in the
// future") counts as zero.
func InactiveFor(op Operation, now time.Time) *time.Duration {
	d, ok := inactiveFor(&op, now)
	if !ok {
		return nil
	}
	return &d
}

// inactiveFor is InactiveFor without the allocation (evaluation runs for
// every flagged operation on every refresh).
func inactiveFor(op *Operation, now time.Time) (time.Duration, bool) {
	if !op.ClientActivityKnown || op.ClientLastActivity.IsZero() {
		return 0, false
	}
	return max(now.Sub(op.ClientLastActivity), 0), true
}

// PossiblyReaped: only a proxy's account says op still runs, and that
// account is older than the server's inactivity reaper. The proxy
// cannot see the reaper, so once its owner made no call for
// --server-idle-timeout and no server source has confirmed the
// operation since the reaper could act, the server may have failed it:
// dbxtop raises neither INACTIVE nor STALE on such an operation (both
// would claim the server still runs it) and counts down to no reaper;
// query history's end, when it comes, replaces the proxy's word
// (docs/model.md, "Evidence").
func PossiblyReaped(op *Operation, now time.Time, th Thresholds) bool {
	in, ok := inactiveFor(op, now)
	return ok && possiblyReaped(op, in, th.WithDefaults())
}

func possiblyReaped(op *Operation, inactive time.Duration, th Thresholds) bool {
	if op.Proxy == nil || op.State.Terminal() || op.Gone || inactive < th.ServerIdleTimeout {
		return false
	}
	reaperCould := op.ClientLastActivity.Add(th.ServerIdleTimeout)
	return op.LastPollOKAt.IsZero() || op.LastPollOKAt.Before(reaperCould)
}

// ReapedIn is the countdown to the server's inactivity reaper:
// ServerIdleTimeout − inactivity, floored at zero. It is nil when the
// inactivity is unknown or the operation is terminal (the reaper only
// fails operations that still run), or when the server no longer has it.
func ReapedIn(op Operation, now time.Time, th Thresholds) *time.Duration {
	d, ok := reapedIn(&op, now, th.WithDefaults())
	if !ok {
		return nil
	}
	return &d
}

func reapedIn(op *Operation, now time.Time, th Thresholds) (time.Duration, bool) {
	in, ok := inactiveFor(op, now)
	if !ok || op.State.Terminal() || op.Gone || possiblyReaped(op, in, th) {
		return 0, false
	}
	return max(th.ServerIdleTimeout-in, 0), true
}

// EvaluateOperation raises the flags of docs/model.md (Operation flags) for one operation
// at instant now. It is pure: the same inputs always give the same flags,
// in the fixed order INACTIVE, STALE, UNCLOSED, CLOSE_FAILED, REAPED.
// Operations that vanished from every source (Gone) only keep REAPED, the
// evidence of what happened to them.
func EvaluateOperation(op Operation, now time.Time, th Thresholds) []Flag {
	return evaluate(&op, now, th.WithDefaults())
}

// evaluate is EvaluateOperation on a pointer: an Operation is 400 bytes,
// and this runs for every changed or flagged operation on every refresh.
func evaluate(op *Operation, now time.Time, th Thresholds) []Flag {
	var buf [5]Flag // at most one of each kind; the result is one exact allocation
	flags := evaluateInto(buf[:0], op, now, th)
	if len(flags) == 0 {
		return nil
	}
	return append([]Flag(nil), flags...)
}

// evaluateInto appends op's flags to flags (cap 5 holds every kind).
func evaluateInto(flags []Flag, op *Operation, now time.Time, th Thresholds) []Flag {
	live := !op.State.Terminal() && !op.Gone
	if in, ok := inactiveFor(op, now); ok && live && possiblyReaped(op, in, th) {
		live = false // the proxy's word that it runs has aged out
	}
	if live {
		if f, ok := inactiveFlag(op, now, th); ok {
			flags = append(flags, f)
		}
		if f, ok := staleFlag(op, now, th); ok {
			flags = append(flags, f)
		}
	}
	if !op.Gone {
		if f, ok := unclosedFlag(op, now, th); ok {
			f.Detail += unverified(op, now, th)
			flags = append(flags, f)
		}
		// CLOSE_FAILED names who failed: dbxtop's own close, or the owning
		// client's as the proxy saw it (dbxtop's, when both, is the one the
		// operator can act on).
		// Once the operation is closed (by a later retry, its client, the
		// proxy's queue or the server), a failed close is history: the
		// flag clears and its event says who closed it (ClosedBy).
		if closedOnServer(op) {
			// nothing to close
		} else if op.Close.State == CloseFailed {
			flags = append(flags, closeFailedFlag(op, now))
		} else if op.Proxy != nil && op.Proxy.CloseOutcome == ProxyCloseFailed {
			flags = append(flags, clientCloseFailedFlag(op.Proxy, now))
		}
	}
	if op.State == StateFailed && strings.Contains(strings.ToLower(op.ServerError), reapedMessage) {
		flags = append(flags, Flag{
			Kind:     FlagReaped,
			Severity: SeverityWarning,
			Detail:   fmt.Sprintf("server failed it for client inactivity (an orphan): %q", truncate(op.ServerError, 160)),
		})
	}
	return flags
}

func inactiveFlag(op *Operation, now time.Time, th Thresholds) (Flag, bool) {
	in, ok := inactiveFor(op, now)
	if !ok {
		return Flag{}, false
	}
	sev := th.idleSeverity(in)
	if sev == SeverityNone {
		return Flag{}, false
	}
	detail := "no client call for " + textfmt.Duration(in) + "; "
	if left, _ := reapedIn(op, now, th); left <= 0 {
		detail += "server reaper due now (idle timeout " + textfmt.Duration(th.ServerIdleTimeout) + ")"
	} else {
		detail += "server reaps in " + textfmt.Duration(left)
	}
	return Flag{Kind: FlagInactive, Severity: sev, Detail: detail + unverified(op, now, th)}, true
}

// unverified qualifies a flag derived from what the server last told
// dbxtop when dbxtop has been blind for a while (its polls keep failing):
// the owner may have acted since, so the flag says how old its evidence is
// instead of presenting it as current.
func unverified(op *Operation, now time.Time, th Thresholds) string {
	// Only when polls are failing: an operation dbxtop stopped polling on
	// purpose (terminal, past its leak window) is not "blind".
	if op.LastPollOKAt.IsZero() || op.LastError == nil {
		return ""
	}
	age := max(now.Sub(op.LastPollOKAt), 0)
	if age < th.InactivityWarn {
		return ""
	}
	return " (as of dbxtop's last successful poll " + textfmt.Duration(age) + " ago; unverified since)"
}

// staleFlag: a followed (shown, non-terminal) operation dbxtop could not
// poll successfully for a while. Never polled ok counts from FirstSeenAt;
// with neither known there is nothing to measure.
func staleFlag(op *Operation, now time.Time, th Thresholds) (Flag, bool) {
	since, what := op.LastPollOKAt, "no successful status poll for %s"
	if since.IsZero() {
		since, what = op.FirstSeenAt, "no successful status poll since first seen %s ago"
	}
	if since.IsZero() {
		return Flag{}, false
	}
	silence := max(now.Sub(since), 0)
	sev := th.idleSeverity(silence)
	if sev == SeverityNone {
		return Flag{}, false
	}
	d := fmt.Sprintf(what, textfmt.Duration(silence))
	d += fmt.Sprintf(" (%d failed, %d retries; still polling)", op.Poll.Failed, op.Poll.Retries)
	if op.LastError != nil {
		d += "; last error: " + op.LastError.String()
	}
	return Flag{Kind: FlagStale, Severity: sev, Detail: d}, true
}

// unclosedFlag: terminal but still held by the server. Without a
// completion time the age of the leak is unknown and nothing is raised.
func unclosedFlag(op *Operation, now time.Time, th Thresholds) (Flag, bool) {
	if !op.State.Terminal() || op.State == StateClosed || op.Open == nil || !*op.Open || op.CompletedAt.IsZero() {
		return Flag{}, false
	}
	age := max(now.Sub(op.CompletedAt), 0)
	var sev Severity
	switch {
	case age >= leakCriticalFactor*th.LeakAfter:
		sev = SeverityCritical
	case age >= th.LeakAfter:
		sev = SeverityWarning
	default:
		return Flag{}, false
	}
	return Flag{Kind: FlagUnclosed, Severity: sev,
		Detail: fmt.Sprintf("%s %s ago and still open on the server", strings.ToLower(string(op.State)), textfmt.Duration(age))}, true
}

// closedOnServer: the server no longer holds the operation open.
func closedOnServer(op *Operation) bool {
	if p := op.Proxy; p != nil && (p.CloseOutcome == "closed" || p.CloseOutcome == "closed_by_proxy" || p.CloseOutcome == "closed_by_server") {
		return true // the proxy saw the close succeed
	}
	return op.State == StateClosed || op.Close.State == CloseClosed || op.Open != nil && !*op.Open
}

// ClosedBy says who closed an operation whose CLOSE_FAILED cleared, for
// the flag-cleared event: dbxtop's own close, the proxy's close queue,
// the owning client (as the proxy saw it), or the server (seen closed,
// closer unknown); "" while it is still open.
func ClosedBy(op *Operation) string {
	if !closedOnServer(op) {
		return ""
	}
	switch {
	case op.Close.State == CloseClosed:
		return "closed by dbxtop's close"
	case op.Proxy != nil && op.Proxy.CloseOutcome == "closed_by_proxy":
		return "closed by the proxy's close queue"
	case op.Proxy != nil && op.Proxy.CloseOutcome == "closed":
		return "closed by its client (seen by the proxy)"
	case op.Proxy != nil && op.Proxy.CloseOutcome == "closed_by_server":
		return "closed by the server (direct results or its session's close)"
	}
	return "seen closed on the server (by its client or the server; dbxtop cannot tell which)"
}

func closeFailedFlag(op *Operation, now time.Time) Flag {
	d := "dbxtop's close failed after " + textfmt.Plural(int64(op.Close.Attempts), "attempt", "attempts")
	if op.Close.LastError != nil {
		d += ": " + op.Close.LastError.String()
	}
	if !op.Close.NextTry.IsZero() {
		d += "; retry in " + textfmt.Duration(max(op.Close.NextTry.Sub(now), 0))
	}
	return Flag{Kind: FlagCloseFailed, Severity: SeverityCritical, Detail: d}
}

// NewOperationView evaluates one operation at now. It normalises the
// zero values that mean "unknown" so that a view encodes and decodes to
// itself: State "" → UNKNOWN, Close.State "" → "n/a", and activity
// marked known without a time → unknown. The view is not cleaned of
// hostile text; EvaluateView is (what snapshots hold).
func NewOperationView(op Operation, now time.Time, th Thresholds) OperationView {
	normalize(&op)
	return *ownView(&op, now, th.WithDefaults()) // the one evaluation of a view (view.go)
}

// normalize gives the zero values that mean "unknown" their one spelling.
func normalize(op *Operation) {
	if !normal(op) {
		if op.State == "" {
			op.State = StateUnknown
		}
		if op.Close.State == "" {
			op.Close.State = CloseNA
		}
		if op.ClientLastActivity.IsZero() {
			op.ClientActivityKnown = false
		}
	}
}

// normal reports whether normalize would leave op as it is.
func normal(op *Operation) bool {
	return op.State != "" && op.Close.State != "" && (!op.ClientActivityKnown || !op.ClientLastActivity.IsZero())
}
