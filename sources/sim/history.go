package sim

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// historyQuery is one query-history request's filter and page.
type historyQuery struct {
	statuses   []string // Query History statuses (QUEUED, RUNNING, …)
	warehouses []string
	ids        []string // statement ids
	users      []int64
	from, to   int64 // query_start_time_range, ms; 0 = open
	max        int
	// cursor, when set, asks for rows strictly older than (ns, id).
	cursor   bool
	curNS    int64
	curID    string
	lastView opView // out: the last row returned (for the next cursor)
}

// history answers one page of query history, newest first, as the
// history service sees the workspace: lag behind the execution engine
// (Options.HistoryLag). A statement appears once it is lag old, and its
// status is what it was lag ago, so a statement that just ended still
// shows RUNNING for lag. Real Query History is eventually consistent
// this way; the lag is 0 unless asked for, so existing tests see the
// engine's state.
func (s *store) history(q *historyQuery, lag time.Duration) (rows []opView, more bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	at := now.Add(-lag)
	if s.unsorted {
		sort.Slice(s.order, func(i, j int) bool { return before(s.order[i], s.order[j]) })
		s.unsorted = false
	}
	cands := s.order
	if len(q.ids) > 0 {
		// A lookup by id costs the ids asked for, not the workspace.
		seen := make(map[*operation]bool, len(q.ids))
		cands = make([]*operation, 0, len(q.ids))
		for _, id := range q.ids {
			if op := s.byID[strings.ToLower(id)]; op != nil && !seen[op] {
				seen[op] = true
				cands = append(cands, op)
			}
		}
		slices.SortFunc(cands, func(a, b *operation) int {
			if before(a, b) {
				return -1
			}
			return 1
		})
	}
	end := len(cands)
	if q.cursor {
		end = sort.Search(len(cands), func(i int) bool {
			ns := cands[i].created.UnixNano()
			return ns > q.curNS || (ns == q.curNS && cands[i].id >= q.curID)
		})
	}
	for i := end - 1; i >= 0; i-- {
		op := cands[i]
		advance(op, now)
		v, ok := viewAt(op, at)
		if !ok {
			continue
		}
		st := historyStatus(v.State)
		startMs := v.Created.UnixMilli()
		switch {
		case len(q.statuses) > 0 && !slices.Contains(q.statuses, st),
			len(q.warehouses) > 0 && !slices.Contains(q.warehouses, v.Warehouse),
			len(q.users) > 0 && !slices.Contains(q.users, userID(v.User)),
			q.from != 0 && startMs < q.from,
			q.to != 0 && startMs > q.to:
			continue
		}
		if len(rows) == q.max {
			return rows, true
		}
		rows = append(rows, v)
		q.lastView = v
	}
	return rows, false
}

// viewAt is the operation as the history service knew it at at: not
// listed before it was created; running (or queued) until it ended.
func viewAt(op *operation, at time.Time) (opView, bool) {
	if op.created.After(at) {
		return opView{}, false
	}
	v := viewOf(op)
	if op.completed.IsZero() || op.completed.After(at) {
		v.State = model.StateRunning
		if at.Before(op.pendingUntil) {
			v.State = model.StatePending
		}
		v.Completed, v.ErrMsg, v.Rows = time.Time{}, "", 0
	}
	return v, true
}
