package model

import "time"

// Shared, immutable operation views (docs/model.md, "Snapshot"): a snapshot holds pointers to views, and a view is reused
// from one snapshot to the next for as long as it is exactly what a fresh
// evaluation would give. Nothing is ever written to a view once built,
// so the TUI, an export and the engine can hold the same one.

// EvaluateView is NewOperationView made safe to print: every string that
// came from the workspace is cleaned (docs/model.md, hostile text). This is
// what snapshots hold.
func EvaluateView(op Operation, now time.Time, th Thresholds) *OperationView {
	normalize(&op)
	v := ownView(&op, now, th.WithDefaults())
	v.sanitize() // its own copy, not yet shared
	return v
}

// opView is a new operation copy with its first view, in one allocation
// (a changed operation needs both).
type opView struct {
	op Operation
	v  OperationView
}

// viewBlock is a view with flags or running figures and the storage its
// pointers use, in one allocation (112 bytes; the operation is shared):
// a refresh re-evaluates every flagged operation (their details count
// time), and one allocation instead of three is much of that cost.
type viewBlock struct {
	v     OperationView
	durs  [2]time.Duration
	flags [1]Flag // most flagged operations carry one flag
}

// ownView evaluates op, normalised, at now into a new view that keeps a
// copy of it; th has its defaults. op stays the caller's: it does not
// escape, so a caller's local copy stays on its stack.
func ownView(op *Operation, now time.Time, th Thresholds) *OperationView {
	ov := &opView{op: *op}
	return evalView(&ov.op, now, th, &ov.v)
}

// shareView is ownView for an operation that is already a view's
// (immutable, shared): the new view points at it.
func shareView(op *Operation, now time.Time, th Thresholds) *OperationView {
	return evalView(op, now, th, nil)
}

// evalView evaluates op, the view's own operation, at now: into plain
// (nil: a new one) when it has no flag or running figure, else into a new
// viewBlock.
func evalView(op *Operation, now time.Time, th Thresholds, plain *OperationView) *OperationView {
	var buf [5]Flag
	flags := evaluateInto(buf[:0], op, now, th)
	in, inOK := inactiveFor(op, now)
	if len(flags) == 0 && !inOK {
		if plain == nil {
			plain = new(OperationView)
		}
		plain.Operation = op
		return plain
	}
	b := new(viewBlock)
	b.v.Operation = op
	v := &b.v
	if len(flags) <= len(b.flags) {
		v.Flags = b.flags[:copy(b.flags[:], flags):len(flags)] // capped: an append copies
	} else {
		v.Flags = append([]Flag(nil), flags...)
	}
	if len(flags) == 0 {
		v.Flags = nil
	}
	if inOK {
		b.durs[0] = in
		v.InactiveFor = &b.durs[0]
		if r, ok := reapedIn(op, now, th); ok {
			b.durs[1] = r
			v.ReapedIn = &b.durs[1]
		}
	}
	return v
}

// ViewCache keeps one operation's latest view and how long it stays
// exact. The zero value is empty. Not safe for concurrent use: its owner
// (the engine, under its lock) refreshes it; the views it hands out are.
type ViewCache struct {
	view  *OperationView
	at    time.Time // when view was evaluated
	until time.Time // first instant it may differ (exclusive); zero: until op changes
	gen   uint64    // views built so far
}

// Gen counts the views the cache has built: it changes exactly when View
// hands out a new one.
func (c *ViewCache) Gen() uint64 { return c.gen }

// Fresh returns the cached view when time alone has not made it stale
// at now: the caller knows that the operation did not change since View
// last saw it (the engine marks every write), so the operation is not
// compared. False when there is no view or a deadline or running figure
// is due.
func (c *ViewCache) Fresh(now time.Time) (*OperationView, bool) {
	if c.view == nil || now.Before(c.at) || (!c.until.IsZero() && !now.Before(c.until)) {
		return nil, false
	}
	return c.view, true
}

// Aged is View for an operation the caller knows did not change since
// the cached view was built (the engine marks every write): a view that
// time made stale is evaluated again from its own cleaned copy of the
// operation, without reading or comparing the caller's. There must be a
// cached view.
func (c *ViewCache) Aged(now time.Time, th Thresholds) *OperationView {
	if v, ok := c.Fresh(now); ok {
		return v
	}
	th = th.WithDefaults()
	v := shareView(c.view.Operation, now, th) // shares the cleaned copy
	sanitizeFlags(v.Flags)                    // details quote proxy errors, not cleaned with the operation
	c.view, c.at, c.until = v, now, validUntil(v.Operation, now, th)
	c.gen++
	return v
}

// Until is the first instant at which the cached view may differ from a
// fresh evaluation with time alone (a flag deadline; the evaluation
// instant itself when the view shows a running figure); false when
// nothing changes with time alone, or there is no view.
func (c *ViewCache) Until() (time.Time, bool) {
	if c.view == nil || c.until.IsZero() {
		return time.Time{}, false
	}
	return c.until, true
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
	valid := !now.Before(c.at) && (c.until.IsZero() || now.Before(c.until))
	if c.view != nil && valid && normal(op) && *op == *c.view.Operation {
		return c.view, false // the common case, without a copy
	}
	if c.view != nil && cleanAs(op, c.view) {
		// Its text is what the cached view shows, so it is clean already
		// (cleaning is idempotent): only the rest can have changed.
		n := *op
		normalize(&n)
		if n == *c.view.Operation {
			if valid {
				return c.view, false
			}
			v = shareView(c.view.Operation, now, th) // only aged: share the copy
		} else {
			v = ownView(&n, now, th)
		}
		sanitizeFlags(v.Flags) // details quote proxy errors, not cleaned with the operation
	} else {
		v = EvaluateView(*op, now, th)
	}
	c.view, c.at, c.until = v, now, validUntil(v.Operation, now, th)
	c.gen++
	return v, true
}

// cleanAs reports whether every field that cleaning touches is, in op,
// exactly what v shows (the confirmation of a running statement changes
// its times and counters, never its text).
func cleanAs(op *Operation, v *OperationView) bool {
	return op.StatementID == v.StatementID && op.WarehouseID == v.WarehouseID && op.User == v.User &&
		op.ClientApplication == v.ClientApplication && op.SQL == v.SQL && op.ServerError == v.ServerError &&
		(op.State == v.State || op.State == "") && op.LastError == v.LastError && op.Close.LastError == v.Close.LastError
}

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
