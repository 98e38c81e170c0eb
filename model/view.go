package model

import "time"

// Shared, immutable operation views (docs/performance.md, "Incremental
// snapshots"): a snapshot holds pointers to views, and a view is reused
// from one snapshot to the next for as long as it is exactly what a fresh
// evaluation would give. Nothing is ever written to a view once built,
// so the TUI, an export and the engine can hold the same one.

// EvaluateView is NewOperationView made safe to print: every string that
// came from the workspace is cleaned (docs/model.md, hostile text). This is
// what snapshots hold.
func EvaluateView(op Operation, now time.Time, th Thresholds) *OperationView {
	v := &OperationView{Operation: op}
	v.evaluate(now, th.WithDefaults())
	v.sanitize()
	return v
}

// ViewCache keeps one operation's latest view and how long it stays
// exact. The zero value is empty. Not safe for concurrent use: its owner
// (the engine, under its lock) refreshes it; the views it hands out are.
type ViewCache struct {
	view  *OperationView
	at    time.Time // when view was evaluated
	until time.Time // first instant it may differ (exclusive); zero: until op changes
}

// View returns op's view at now: the cached one when op has not changed
// and now is within its validity, otherwise a new one (changed is then
// true). A view that only aged (same operation, its time-driven figures
// due) is re-evaluated from the cached view's cleaned copy of the
// operation, without cleaning the text again.
//
// op is read, never kept: the view holds its own copy.
func (c *ViewCache) View(op *Operation, now time.Time, th Thresholds) (v *OperationView, changed bool) {
	th = th.WithDefaults()
	same := false
	if c.view != nil {
		if normal(op) {
			same = *op == c.view.Operation
		} else {
			n := *op
			normalize(&n)
			same = n == c.view.Operation
		}
	}
	if same && !now.Before(c.at) && (c.until.IsZero() || now.Before(c.until)) {
		return c.view, false
	}
	if same {
		v = &OperationView{Operation: c.view.Operation}
		v.evaluate(now, th)
		sanitizeFlags(v.Flags) // details quote proxy errors, not cleaned with the operation
	} else {
		v = EvaluateView(*op, now, th)
	}
	c.view, c.at, c.until = v, now, validUntil(&v.Operation, now, th)
	return v, true
}

// Current is the cached view (nil before the first View).
func (c *ViewCache) Current() *OperationView { return c.view }

// validUntil is the first instant after now at which EvaluateOperation,
// InactiveFor or ReapedIn may give something else for op: the next flag
// deadline, or now itself when the view shows a running duration (the
// inactivity figure, or a flag whose detail counts time), which every
// later evaluation renders anew. Zero: nothing changes with time alone.
// It follows the rules of EvaluateOperation; TestViewCacheExact checks
// that the two agree.
func validUntil(op *Operation, now time.Time, th Thresholds) time.Time {
	var until time.Time
	due := func(t time.Time) {
		if until.IsZero() || t.Before(until) {
			until = t
		}
	}
	if op.Close.State == CloseFailed || (op.Proxy != nil && op.Proxy.CloseOutcome == ProxyCloseFailed) {
		return now // "retry in …" counts down
	}
	if _, ok := inactiveFor(op, now); ok {
		return now // the inactivity figure (and the reaper countdown) run
	}
	if !op.State.Terminal() && !op.Gone {
		since := op.LastPollOKAt
		if since.IsZero() {
			since = op.FirstSeenAt
		}
		if !since.IsZero() {
			raise := since.Add(min(th.InactivityWarn, th.idleCritical()))
			if !now.Before(raise) {
				return now // STALE shows its silence
			}
			due(raise)
		}
	}
	if !op.Gone && op.State.Terminal() && op.State != StateClosed && op.Open != nil && *op.Open && !op.CompletedAt.IsZero() {
		raise := op.CompletedAt.Add(th.LeakAfter)
		if !now.Before(raise) {
			return now // UNCLOSED shows its age
		}
		due(raise)
	}
	return until
}
