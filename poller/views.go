package poller

import (
	"fmt"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// viewCache keeps each operation's evaluated view (model.ViewCache) and
// the flags last compared for events. A view is rebuilt only when its
// operation changed (touch) or a deadline came: a flag's, or a running
// figure's (model.ViewCache.Until), kept in the due heap. So the
// once-a-second flag comparison (compare) looks at what changed and what
// is due, not at every followed operation. Part of the ledger, under its
// lock.
type viewCache struct {
	th      model.Thresholds
	changed []*entry // touched since the last compare
	due     dueHeap  // views a time deadline changes
	// flags are the kinds and severities last compared, by operation id
	// or "endpoint:" and endpoint name. Lists of one flag are shared
	// (ones, by kind and severity): most flagged operations carry one
	// flag of a few kinds, and a list each is heap per operation, a goal
	// with little headroom (docs/performance.md). Lists are replaced,
	// never written, so sharing them is safe.
	flags map[string][]model.Flag
	ones  map[model.Flag][]model.Flag
}

func newViewCache(th model.Thresholds) viewCache {
	return viewCache{th: th, flags: map[string][]model.Flag{}, ones: map[model.Flag][]model.Flag{}}
}

// touch records that en.op is about to change: its cached view is no
// longer trusted without a comparison, and the next compare looks at it.
// Every write to an entry's operation goes with a touch.
func (c *viewCache) touch(en *entry) {
	en.dirty = true
	if !en.inChanged {
		en.inChanged = true
		c.changed = append(c.changed, en)
	}
}

// view is en's view at now: the cached one when nothing touched it and
// no deadline is due, else evaluated again.
func (c *viewCache) view(en *entry, now time.Time) *model.OperationView {
	if !en.dirty && en.view.Gen() > 0 {
		if v, ok := en.view.Fresh(now); ok {
			return v
		}
		// Only time moved: evaluated again from the view's own copy.
		return en.view.Aged(now, c.th)
	}
	en.dirty = false
	v, _ := en.view.View(&en.op, now, c.th)
	return v
}

// forget drops what the cache holds for an operation no longer followed.
func (c *viewCache) forget(en *entry) {
	delete(c.flags, en.op.StatementID)
	c.due.remove(en)
}

// compare evaluates the views of the operations touched since the last
// call and of those whose deadline came, and emits an event for each flag
// raised, changed in severity or cleared.
func (c *viewCache) compare(now time.Time, emit func(model.Event)) {
	// What is due is taken out first: a view with a running figure goes
	// back in due at once, for the next call.
	for en := c.due.popDue(now); en != nil; en = c.due.popDue(now) {
		if !en.inChanged {
			en.inChanged = true
			c.changed = append(c.changed, en)
		}
	}
	changed := c.changed
	for i, en := range changed {
		en.inChanged = false
		changed[i] = nil
		if !en.deleted {
			c.look(en, now, emit)
		}
	}
	c.changed = changed[:0]
}

// look compares one operation's flags and files its next deadline.
func (c *viewCache) look(en *entry, now time.Time, emit func(model.Event)) {
	v := c.view(en, now)
	if en.view.Gen() != en.flagged { // else these flags were compared already
		en.flagged = en.view.Gen()
		if id := en.op.StatementID; len(v.Flags) > 0 || c.flags[id] != nil {
			c.diff(id, id, "", v.Flags, &en.op, now, emit)
		}
	}
	if at, ok := en.view.Until(); ok {
		c.due.set(en, at) // its next deadline; a running figure's is now: looked at next time
	} else {
		c.due.remove(en)
	}
}

// diff compares flags with those last compared under key and emits the
// differences; kinds and severities only are kept, a few bytes per
// flagged operation. op (nil for an endpoint) names who closed an
// operation whose CLOSE_FAILED clears.
func (c *viewCache) diff(key, opID, endpoint string, flags []model.Flag, op *model.Operation, now time.Time, emit func(model.Event)) {
	prev := c.flags[key]
	same := len(prev) == len(flags)
	for _, f := range flags {
		if levelOf(prev, f.Kind) != f.Severity {
			same = false
			break
		}
	}
	if same {
		return
	}
	cur := make([]model.Flag, len(flags))
	for i, f := range flags {
		cur[i] = model.Flag{Kind: f.Kind, Severity: f.Severity}
		if levelOf(prev, f.Kind) != f.Severity {
			f := f
			f.Detail = textfmt.Line(f.Detail)
			emit(model.Event{At: now, Kind: model.EventFlagRaised, StatementID: opID, Endpoint: endpoint, Flag: &f,
				Message: fmt.Sprintf("%s %s: %s", f.Kind, f.Severity, f.Detail)})
		}
	}
	for _, f := range prev {
		if levelOf(cur, f.Kind) == model.SeverityNone {
			msg := fmt.Sprintf("%s cleared", f.Kind)
			if f.Kind == model.FlagCloseFailed && op != nil {
				if by := model.ClosedBy(op); by != "" {
					msg += ": " + by
				}
			}
			emit(model.Event{At: now, Kind: model.EventFlagCleared, StatementID: opID, Endpoint: endpoint, Flag: &f,
				Message: msg})
		}
	}
	switch len(cur) {
	case 0:
		delete(c.flags, key)
	case 1:
		one, ok := c.ones[cur[0]]
		if !ok {
			one = cur
			c.ones[cur[0]] = one
		}
		c.flags[key] = one
	default:
		c.flags[key] = cur
	}
}

// levelOf is the severity of kind among flags (SeverityNone: absent).
func levelOf(flags []model.Flag, kind model.FlagKind) model.Severity {
	for _, f := range flags {
		if f.Kind == kind {
			return f.Severity
		}
	}
	return model.SeverityNone
}

// check reports the first broken invariant of the cache over ens (the
// followed operations) at now: every touched operation waits for the
// next compare; a view whose flags were not compared is either waiting
// too or due; every view a deadline changes waits in the due heap no
// later than that deadline; the due heap's order and positions hold.
func (c *viewCache) check(ens []*entry, now time.Time) error {
	for i, en := range c.due {
		if int(en.didx) != i || en.dkey > en.due {
			return fmt.Errorf("views: %s at %d in the due heap (index %d), key %d after its deadline %d", en.op.StatementID, i, en.didx, en.dkey, en.due)
		}
		if i > 0 && c.due[(i-1)/2].dkey > en.dkey {
			return fmt.Errorf("views: the due heap is out of order at %d", i)
		}
	}
	waiting := 0
	for _, en := range c.changed {
		if !en.inChanged {
			return fmt.Errorf("views: %s waits for a compare but is not marked", en.op.StatementID)
		}
	}
	for _, en := range ens {
		id := en.op.StatementID
		if en.inChanged {
			waiting++
			continue
		}
		due := en.didx >= 0 && en.due <= stamp(now)
		switch {
		case en.dirty:
			return fmt.Errorf("views: %s changed without waiting for a compare", id)
		case en.view.Gen() != en.flagged && !due:
			return fmt.Errorf("views: the flags of %s's view were not compared and it is not due", id)
		}
		if at, ok := en.view.Until(); ok && (en.didx < 0 || en.due > stamp(at)) {
			return fmt.Errorf("views: the view of %s changes at %s but is not due by then", id, at)
		}
	}
	if waiting > len(c.changed) {
		return fmt.Errorf("views: %d operations marked as waiting for a compare, %d wait", waiting, len(c.changed))
	}
	return nil
}
