package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// discovery is the discovery rounds' own state.
type discovery struct {
	running   bool
	last      time.Time // last successful discovery
	lastFull  time.Time // last discovery that listed ended statements without a problem
	lastFullN int       // ended statements it listed
	fails     int64     // failed discovery rounds
	failed    bool      // the last discovery round failed
	// keys are the workspace error keys the last discovery set.
	keys map[string]bool
	// listing is Options.Warehouses after the last good discovery.
	listing *model.WarehouseListing
}

// discoverRound runs one discovery and merges its result. Each request
// of the discovery goes through the policy on its own (e.retry). A
// partial result (a truncated listing, a failed side listing) is merged
// and its problems become workspace errors; only a discovery that read
// nothing is an error.
func (e *Engine) discoverRound(ctx context.Context) error {
	e.mu.Lock()
	start := e.clk.Now()
	scope := e.discoveryScope(start)
	e.mu.Unlock()
	ds, err := sources.DiscoverIn(ctx, e.o.Discoverer, e.retry, scope)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.disc.running = false
	now := e.clk.Now()
	var partial *sources.PartialError
	if err != nil && !errors.As(err, &partial) {
		e.disc.fails++
		if !e.disc.failed && ctx.Err() == nil {
			// What stops observation, once per outage (not per round).
			e.log(slog.LevelError, "discovery failed: the workspace is not observed: "+retry.Describe(err), slog.String("call", CallDiscover))
		}
		e.disc.failed = true
		if ctx.Err() == nil || len(e.disc.keys) == 0 {
			e.setDiscoveryErrors([]error{err})
		}
		return fmt.Errorf("discovering operations: %w", err)
	}
	var problems []error
	if partial != nil {
		problems = partial.Errs
	}
	e.setDiscoveryErrors(problems)
	if e.disc.failed {
		e.log(slog.LevelInfo, "discovery recovered: the workspace is observed again", slog.String("call", CallDiscover))
	}
	e.disc.last, e.disc.failed = now, false
	if e.o.Warehouses != nil {
		if l, ok := e.o.Warehouses.WarehouseListing(); ok {
			e.disc.listing = &l
		}
	}
	full := !scope.NoFinished
	if full && len(problems) == 0 {
		e.disc.lastFull, e.disc.lastFullN = start, 0 // the pace is from start to start
		for i := range ds {
			if ds[i].Op.State.Terminal() {
				e.disc.lastFullN++ // what the listing of ended statements read
			}
		}
	}
	e.merge(ds, now, full)
	return nil
}

// discoveryScope narrows a discovery to what it is still needed for
// (e.mu held). Live statements: the batch listing reads every one of
// them each BatchEvery and adopts the new ones, so while it runs (some
// live operation is followed) discovery does not list them again. Ended
// statements: they matter only from --leak-after after their end, so a
// full discovery that reads many rows comes at most every
// finishedRowsPerSecond on average and at least every FinishedEvery; a
// small one (a quiet workspace, where a statement that ended between two
// listings should show at once) every time. The first discovery, and one
// after a listing with a problem, is full.
func (e *Engine) discoveryScope(now time.Time) sources.Scope {
	var sc sources.Scope
	if e.disc.lastFull.IsZero() {
		return sc
	}
	if _, ok := e.o.Batch.(sources.LiveLister); ok && e.book.live() > 0 {
		sc.NoLive = true
	}
	rate := e.o.finishedRows
	if rate <= 0 {
		rate = finishedRowsPerSecond
	}
	pace := min(e.o.FinishedEvery, time.Duration(e.disc.lastFullN)*time.Second/time.Duration(rate))
	if now.Sub(e.disc.lastFull) < pace { // FinishedEvery < 0: never
		sc.NoFinished = true
	}
	return sc
}

// finishedRowsPerSecond: the average pace at which full discoveries may
// read ended statements (5,000 listed: one every 20 s).
const finishedRowsPerSecond = 250

// recordWSError sets call's workspace error (e.mu held).
func (e *Engine) recordWSError(call string, err error) {
	info := retry.ErrorInfoOf(err)
	if info.Call == "" {
		info.Call = call
	}
	e.hs.wsErrs[call] = *info
	e.hs.lastErr = info
}

// merge adds newly discovered operations and refreshes descriptive fields
// of known ones. An operation missing from discovery is not dropped: it is
// followed until it is closed or gone, then retained for retainFor, and
// forgotten only after a full discovery (one that listed ended
// statements) no longer lists it.
func (e *Engine) merge(ds []sources.Discovered, now time.Time, full bool) {
	e.adopt(ds, now)
	e.boundNow(now)
	if !full {
		return
	}
	// Every listing since the last full discovery marked what it listed
	// (adopt, listRound).
	e.book.sweep(now)
}

// discoveredID is the id a discovered operation is followed by.
func discoveredID(d *sources.Discovered) string {
	if d.Op.StatementID != "" {
		return d.Op.StatementID
	}
	return d.Ref.StatementID
}

// adopt follows the listed operations that are new and refreshes the
// descriptive fields of known ones (a discovery, or the batch listing's
// first sight of a statement). e.mu held.
func (e *Engine) adopt(ds []sources.Discovered, now time.Time) (added []*entry) {
	for i := range ds {
		d := &ds[i]
		id := discoveredID(d)
		if id == "" {
			continue
		}
		en := e.book.get(id)
		if en == nil {
			if e.book.wasDropped(id) {
				continue // not followed again: the bound dropped it
			}
			en = e.follow(d, id, now)
			added = append(added, en)
		} else {
			e.refresh(en, d, now)
		}
		e.book.listed(en, 0) // listed before the next full discovery
	}
	for _, en := range added {
		e.book.addLive(en)
	}
	return added
}

// follow starts following a newly listed operation (e.mu held).
func (e *Engine) follow(d *sources.Discovered, id string, now time.Time) *entry {
	op := d.Op
	op.StatementID = id
	op.FirstSeenAt = now
	if op.Close.State == "" {
		op.Close.State = model.CloseNA
	}
	if op.State == "" {
		op.State = model.StateUnknown
	}
	en := newEntry(op, d.Ref)
	if en.ref.StatementID == "" {
		en.ref.StatementID = id
	}
	e.book.add(en)
	switch {
	case op.State == model.StateClosed || (op.State.Terminal() && op.Open != nil && !*op.Open):
		e.book.retire(en, now)
	case e.batchMode() && op.State != model.StateUnknown:
		// Listed by query history: that is a confirmation. A few first
		// operations get one poll of their own, to learn whether the
		// status source reports client activity.
		e.confirm(en, sources.ListedStatus(&op), now)
		if e.batch.probes < activityProbes && !en.retired {
			e.batch.probes++
			en.probe = true
			e.sched.at(en, now)
		}
	default:
		e.book.listedEnd(en, now)
		e.sched.at(en, now)
	}
	e.out.emit(model.Event{At: now, Kind: model.EventDiscovered, StatementID: id, Message: fmt.Sprintf("following %s on %s (%s)", id, op.WarehouseID, op.State)})
	return en
}

// refresh applies a listing's row to an operation already followed: its
// descriptive fields, what a proxy saw, and its state as a confirmation
// (batch mode) or, before any poll answered, as its first state.
func (e *Engine) refresh(en *entry, d *sources.Discovered, now time.Time) {
	e.book.describe(en, d)
	if d.Op.Proxy != nil {
		e.book.proxySaw(en, &d.Op, now)
	}
	if e.batchMode() && d.Op.State != "" && d.Op.State != model.StateUnknown && !en.retired {
		// A listing of query history confirms like a batch.
		e.confirm(en, sources.ListedStatus(&d.Op), now)
		return
	}
	// Discovery says it ended while we still think it runs: confirm with
	// a status poll now instead of at the next scheduled one. Detection
	// becomes the earlier of the two schedules, at no extra cost for
	// operations that keep running.
	if d.Op.State.Terminal() && !en.op.State.Terminal() && !en.retired && !en.polling && en.idx >= 0 && en.next > stamp(now) {
		e.sched.at(en, now)
	}
	e.book.listedState(en, &d.Op, now)
}

// setIf keeps the string it has when v says the same: the next view
// then compares it by pointer, not byte by byte (model.ViewCache), and
// the listing's copy is left to the collector.
func setIf(dst *string, v string) {
	if differs(*dst, v) {
		*dst = v
	}
}

// differs: a listing's v would change have.
func differs(have, v string) bool { return v != "" && v != have }
