package poller

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// MaxEnded bounds the ended operations the ledger holds (docs/model.md,
// "How many ended operations are followed"): five times the 10,000 live
// operations the scale goals are set at, so at most that many times their
// heap (docs/performance.md). Past it the oldest ended operations with
// nothing to show are dropped first; one dbxtop must close never is.
const MaxEnded = 50_000

// bound drops ended operations beyond l.max (0: MaxEnded): first the
// retired ones with no flag, then those still asked about with no flag,
// then those not asked yet, then flagged ones, each oldest end first; never one whose close dbxtop
// owes or that has a call in flight. Each dropped id is remembered until
// a full discovery no longer lists it, so a listing does not follow it
// again. It returns the dropped entries, for the scheduler to forget.
func (l *ledger) bound() []*entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	limit := l.max
	if limit == 0 {
		limit = MaxEnded
	}
	if limit < 0 || len(l.ops.ops) <= limit {
		return nil
	}
	var ended, droppable []*entry
	for _, en := range l.ops.ordered() {
		if en.deleted || (!en.retired && !en.op.State.Terminal()) {
			continue
		}
		ended = append(ended, en)
		if !en.queued && !en.op.Adopted && !en.closing && !en.polling {
			droppable = append(droppable, en)
		}
	}
	over := len(ended) - limit
	if over <= 0 {
		return nil
	}
	rank := func(en *entry) int {
		switch {
		case l.views.flags[en.op.StatementID] != nil:
			return 3
		case en.retired:
			return 0
		case en.op.Poll.OK+en.op.Poll.Failed == 0:
			return 2 // not asked yet: it may be an old leak
		}
		return 1
	}
	slices.SortStableFunc(droppable, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(endOf(a), endOf(b)))
	})
	dropped := droppable[:min(over, len(droppable))]
	if l.tomb == nil {
		l.tomb = map[string]uint64{}
	}
	for _, en := range dropped {
		l.views.forget(en)
		en.retired = true // a poll that answers after this files nothing
		l.ops.forget(en)
		l.tomb[en.op.StatementID] = l.ops.gen + 1
		l.dropped++
	}
	return dropped
}

// endOf orders ended operations by age: when each ended, else when it
// was retired.
func endOf(en *entry) int64 {
	switch {
	case en.terminal:
		return en.terminalAt
	case !en.op.CompletedAt.IsZero():
		return stamp(en.op.CompletedAt)
	}
	return en.retiredAt
}

// dropped reports whether id was dropped by the bound, and if so marks it
// listed again: a full discovery that no longer lists it lets it go.
func (l *ledger) wasDropped(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.tomb[id]; !ok {
		return false
	}
	l.tomb[id] = l.ops.gen + 1
	return true
}

// sweepDropped forgets the dropped ids the last full discovery did not
// list (after store.sweep moved gen on).
func (l *ledger) sweepDropped() {
	for id, seen := range l.tomb {
		if seen != l.ops.gen {
			delete(l.tomb, id)
		}
	}
}

// notFollowed is how many ended operations the bound dropped since start.
func (l *ledger) notFollowed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// boundNow applies the bound after a discovery merged and tells what it
// dropped (e.mu held).
func (e *Engine) boundNow(now time.Time) {
	dropped := e.book.bound()
	if len(dropped) == 0 {
		return
	}
	for _, en := range dropped {
		e.sched.remove(en)
	}
	limit := e.o.maxEnded
	if limit == 0 {
		limit = MaxEnded
	}
	msg := fmt.Sprintf("%s no longer followed: dbxtop follows at most %d ended operations, the oldest with nothing to show first (%d dropped since start)",
		textfmt.Plural(int64(len(dropped)), "ended operation", "ended operations"), limit, e.book.notFollowed())
	e.out.emit(model.Event{At: now, Kind: model.EventNotFollowed, Message: msg})
	e.log(slog.LevelWarn, msg)
}
