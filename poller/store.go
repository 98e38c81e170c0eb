package poller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// entry is one followed operation with its scheduling state. The ledger
// writes its operation and the fields of its parts (store, view cache,
// close queue); the scheduler, under the engine's lock, the poll heap's.
type entry struct {
	op  model.Operation
	ref sources.Ref

	// An entry is held for every followed operation, so its size is heap
	// per operation (a goal with little headroom): instants are stamps,
	// positions int32, and each part's flags sit after its words, so
	// that nothing is padded (TestEntryFitsItsSizeClass).

	// store
	seen       uint64 // the full discovery by which it was last listed (merge)
	listed     uint64 // the last live listing round that showed it
	readRound  uint64 // the RunOnce round that last read its status
	retiredAt  int64  // stamp, valid while retired
	terminalAt int64  // stamp, valid while terminal
	retired    bool   // no longer polled (closed, gone)
	terminal   bool   // terminalAt is set
	deleted    bool   // forgotten (left the map; still in order until compacted)
	inLive     bool   // in store.live
	// asks counts the answers in a row that could not tell whether the
	// ended operation is open (belief.go); it fills the padding after
	// the flags above.
	asks uint16

	// scheduler: the poll heap orders by stamps (heap.go)
	next    int64   // next status poll (stamp), valid while idx >= 0
	key     int64   // its place in the poll heap, next or earlier (pollHeap)
	rate    float64 // expected per-operation polls per second (demand)
	idx     int32   // position in the poll heap; -1: not there
	polling bool
	probe   bool // an activity probe is due (batch mode)

	// view cache: view is the operation's latest evaluated view, shared
	// with every snapshot that holds it; flagged is the generation of the
	// view whose flags were last compared for events.
	view      model.ViewCache
	flagged   uint64
	due, dkey int64 // when the view may next differ with time alone; its place in the due heap
	didx      int32 // position in the due heap; -1: not there
	dirty     bool  // op changed since view was last brought up to date (touch)
	inChanged bool  // in viewCache.changed

	// close queue
	closeFails int32 // consecutive failed close rounds
	closing    bool  // a close attempt is in flight
	queued     bool  // in the close queue
}

func newEntry(op model.Operation, ref sources.Ref) *entry {
	return &entry{op: op, ref: ref, idx: -1, didx: -1}
}

// isLive: followed and not ended.
func isLive(en *entry) bool { return !en.retired && !en.op.State.Terminal() }

// store holds the followed operations: by id, in statement id order (the
// order a snapshot lists them in), and the live ones. Part of the
// ledger, under its lock.
type store struct {
	ops map[string]*entry
	// order is by statement id: order[:sorted] is sorted, the rest came
	// since and is merged in by ordered; holes are forgotten entries not
	// yet compacted.
	order  []*entry
	sorted int
	spare  []*entry // the other buffer of the merge (empty)
	holes  bool
	// gen counts full discoveries: an entry listed since the last one
	// has seen == gen+1 (merge).
	gen uint64
	// live holds the live operations (some may have ended since the last
	// countLive); n is their number at that count, plus those added since.
	live []*entry
	n    int
}

func newStore() store { return store{ops: map[string]*entry{}} }

func (s *store) get(id string) *entry { return s.ops[id] }

// add follows a new operation (its id is not followed yet); it is
// counted live by addLive once its first state is known.
func (s *store) add(en *entry) {
	s.ops[en.op.StatementID] = en
	s.order = append(s.order, en)
}

// forget drops en: a retired operation no full discovery lists any more.
func (s *store) forget(en *entry) {
	delete(s.ops, en.op.StatementID)
	en.deleted, s.holes = true, true
}

func entryCmp(a, b *entry) int { return strings.Compare(a.op.StatementID, b.op.StatementID) }

// ordered returns the operations ordered by statement id. New ones are
// sorted among themselves and merged in, so a snapshot never sorts every
// operation.
func (s *store) ordered() []*entry {
	if n := s.sorted; n < len(s.order) {
		head, tail := s.order[:n], s.order[n:]
		slices.SortFunc(tail, entryCmp)
		if n > 0 && entryCmp(head[n-1], tail[0]) > 0 {
			merged := s.spare[:0]
			i, j := 0, 0
			for i < len(head) && j < len(tail) {
				if entryCmp(tail[j], head[i]) < 0 {
					merged = append(merged, tail[j])
					j++
				} else {
					merged = append(merged, head[i])
					i++
				}
			}
			merged = append(append(merged, head[i:]...), tail[j:]...)
			clear(s.order) // the spare holds no entry
			s.order, s.spare = merged, s.order[:0]
		}
		s.sorted = len(s.order)
	}
	if s.holes {
		s.order = slices.DeleteFunc(s.order, func(en *entry) bool { return en.deleted })
		s.holes = false
		s.sorted = len(s.order)
	}
	return s.order
}

// addLive counts an operation that became followed and live since the
// last countLive.
func (s *store) addLive(en *entry) {
	if !en.inLive && isLive(en) {
		en.inLive = true
		s.live = append(s.live, en)
		s.n++
	}
}

// countLive drops what ended from live and returns how many are left.
// O(live): after discovery merges and once a second, not per loop turn;
// with churn most followed operations have ended, and a walk of every
// one each second was the engine's largest cost after the listing.
func (s *store) countLive() int {
	live := s.live[:0]
	for _, en := range s.live {
		if isLive(en) && !en.deleted {
			live = append(live, en)
		} else {
			en.inLive = false
		}
	}
	clear(s.live[len(live):]) // no ended entry kept alive
	s.live, s.n = live, len(live)
	return s.n
}

// retire stops counting en as followed; it stays for retainFor.
func (s *store) retire(en *entry, now time.Time) {
	en.retired, en.retiredAt = true, stamp(now)
}

// sweep forgets, after a full discovery, the retired operations it did
// not list that were retired more than retainFor ago; each is passed to
// gone first.
func (s *store) sweep(now time.Time, gone func(*entry)) {
	s.gen++
	for _, en := range s.ops {
		if en.retired && !en.queued && en.seen != s.gen && now.Sub(unstamp(en.retiredAt)) > retainFor {
			gone(en)
			s.forget(en)
		}
	}
}

// check reports the first broken invariant: order holds every followed
// entry once, sorted by statement id, and live every live one.
func (s *store) check() error {
	ord := s.ordered()
	if len(ord) != len(s.ops) {
		return fmt.Errorf("store: %d entries in order, %d followed", len(ord), len(s.ops))
	}
	for i, en := range ord {
		if s.ops[en.op.StatementID] != en {
			return fmt.Errorf("store: %s in order but not followed", en.op.StatementID)
		}
		if i > 0 && entryCmp(ord[i-1], en) >= 0 {
			return fmt.Errorf("store: %s before %s", ord[i-1].op.StatementID, en.op.StatementID)
		}
		if isLive(en) && !en.inLive {
			return fmt.Errorf("store: live %s not counted live", en.op.StatementID)
		}
	}
	return nil
}
