package databricks

import (
	"context"
	"time"

	"github.com/databricks/databricks-sdk-go/service/sql"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// CallListQueries is the SDK method name the simulator's faults and the
// poller's events use for query-history requests.
const CallListQueries = "ListQueries"

// Query-history statuses. The API documents these five for filter_by;
// the finer COMPILING/COMPILED/STARTED values only appear in answers.
var (
	liveStatuses     = []sql.QueryStatus{sql.QueryStatusQueued, sql.QueryStatusRunning}
	terminalStatuses = []sql.QueryStatus{sql.QueryStatusFinished, sql.QueryStatusFailed, sql.QueryStatusCanceled}
)

// Discover lists the operations to follow from query history: every queued
// or running statement (whatever its age: a long-running orphan is exactly
// what dbxtop exists for), plus statements that finished, failed or were
// canceled within the discovery window (UNCLOSED and REAPED candidates).
// Between the two listings it refreshes the warehouse gate
// (ListWarehouses), so that the round's status polls know which
// warehouses may be asked over Thrift.
//
// Every request goes through retry on its own: a throttled page is retried
// alone. The live listing is read to the end unless a bound stops it (the
// page cap, the time budget, a repeated page token); the terminal listing
// gets what is left of the budget. The result is then usable but partial,
// and the error says so: a *sources.PartialError holding a
// *sources.TruncatedError (how many statements were seen, and why it
// stopped) and/or the ListWarehouses failure. A failed query-history
// request before anything was read fails the whole call with that error,
// so a permanent error costs exactly one request.
func (c *Client) Discover(ctx context.Context, retry sources.Retry) ([]sources.Discovered, error) {
	return c.DiscoverScope(ctx, retry, sources.Scope{})
}

// DiscoverScope is Discover making only the listings scope keeps; the
// warehouse gate is refreshed whatever the scope.
func (c *Client) DiscoverScope(ctx context.Context, retry sources.Retry, scope sources.Scope) ([]sources.Discovered, error) {
	if retry == nil {
		retry = sources.Once
	}
	now := c.now()
	var problems []error
	// Sized from the last discovery of the same scope: with many
	// operations, growing the slice row by row was most of the listing's
	// CPU. With headroom: with churn, the ended statements a discovery
	// lists grow from one to the next, and a doubling copies them all.
	last := &c.lastDiscovered[scopeIndex(scope)]
	hint := int(last.Load())
	if hint > 0 {
		hint += hint/4 + c.conf.PageSize
	}
	seen := make(map[string]int, hint)
	out := make([]sources.Discovered, 0, hint)
	defer func() { last.Store(int64(len(out))) }()
	add := func(q sql.QueryInfo) {
		d, ok := discoveredFrom(q)
		if !ok {
			return
		}
		if i, dup := seen[d.Ref.StatementID]; dup {
			// The later listing is the fresher answer.
			out[i] = d
			return
		}
		seen[d.Ref.StatementID] = len(out)
		out = append(out, d)
	}
	start := c.now()
	if !scope.NoLive {
		live := &sql.QueryFilter{Statuses: liveStatuses, WarehouseIds: c.conf.Warehouses}
		if err := c.listHistory(ctx, retry, live, "live statements", c.conf.DiscoveryBudget, add); err != nil {
			if _, ok := sources.IsTruncated(err); !ok {
				return nil, err
			}
			problems = append(problems, err)
		}
	}
	// After the first listing, so that a refused token or an exhausted
	// quota still costs exactly one request.
	if err := c.RefreshGate(ctx, retry); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		problems = append(problems, err)
	}
	if scope.NoFinished {
		if len(problems) > 0 {
			return out, &sources.PartialError{Errs: problems}
		}
		return out, nil
	}
	recent := &sql.QueryFilter{
		Statuses:     terminalStatuses,
		WarehouseIds: c.conf.Warehouses,
		QueryStartTimeRange: &sql.TimeRange{
			StartTimeMs: now.Add(-c.conf.DiscoveryWindow).UnixMilli(),
			EndTimeMs:   now.UnixMilli(),
		},
	}
	left := c.conf.DiscoveryBudget - c.now().Sub(start)
	if left < c.conf.DiscoveryBudget/4 {
		// A live listing that took most of the budget leaves the terminal
		// one a quarter of it: UNCLOSED candidates matter too.
		left = c.conf.DiscoveryBudget / 4
	}
	if err := c.listHistory(ctx, retry, recent, "finished statements", left, add); err != nil {
		if _, ok := sources.IsTruncated(err); !ok && len(out) == 0 {
			return nil, err
		}
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return out, &sources.PartialError{Errs: problems}
	}
	return out, nil
}

// listHistory pages through one filtered listing, one request per page,
// each through retry, within the page cap and budget.
func (c *Client) listHistory(ctx context.Context, retry sources.Retry, f *sql.QueryFilter, what string, budget time.Duration, add func(sql.QueryInfo)) error {
	req := sql.ListQueryHistoryRequest{FilterBy: f, MaxResults: c.conf.PageSize}
	pager := sources.Pager{Call: CallListQueries, What: what, MaxPages: c.conf.MaxPages, Budget: budget, Now: c.now}
	seen := 0
	for {
		var resp *historyPage
		err := retry(ctx, CallListQueries, func(ctx context.Context) error {
			r, err := c.historyList(ctx, req) // dbxtop's decoder (history_decode.go), not the SDK's reflection
			resp = r
			return c.wrapErr(CallListQueries, err)
		})
		if err != nil {
			return pager.Failed(err, seen)
		}
		for i := range resp.Res {
			add(resp.Res[i].info())
		}
		seen += len(resp.Res)
		token := resp.NextPageToken
		if !resp.HasNextPage {
			token = ""
		}
		more, trunc := pager.Next(token, seen)
		if trunc != nil {
			return trunc
		}
		if !more {
			return nil
		}
		// Same filter with the token: a stateless server re-applies it.
		req.PageToken = token
	}
}

// scopeIndex numbers the four scopes (Client.lastDiscovered).
func scopeIndex(s sources.Scope) int {
	i := 0
	if s.NoLive {
		i |= 1
	}
	if s.NoFinished {
		i |= 2
	}
	return i
}

// discoveredFrom maps one query-history row; rows without an id are
// skipped (nothing could poll them).
func discoveredFrom(q sql.QueryInfo) (sources.Discovered, bool) {
	if q.QueryId == "" {
		return sources.Discovered{}, false
	}
	wh := q.WarehouseId
	if wh == "" {
		wh = q.EndpointId
	}
	user := q.UserName
	if user == "" {
		user = q.ExecutedAsUserName
	}
	op := model.Operation{
		StatementID:       q.QueryId,
		WarehouseID:       wh,
		User:              user,
		ClientApplication: q.ClientApplication,
		SQL:               q.QueryText,
		State:             model.FromQueryHistory(string(q.Status)),
		StartedAt:         msTime(q.QueryStartTimeMs),
		CompletedAt:       msTime(q.QueryEndTimeMs),
		ServerError:       q.ErrorMessage,
	}
	if op.CompletedAt.IsZero() && op.State.Terminal() {
		op.CompletedAt = msTime(q.ExecutionEndTimeMs)
	}
	return sources.Discovered{Op: op, Ref: sources.Ref{StatementID: q.QueryId, WarehouseID: wh}}, true
}

func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Settle reads the final state of a statement the server no longer holds
// (its handle is gone) from query history: one ListQueries request
// filtered by statement id. Query history keeps the execution status of
// closed statements (FINISHED, FAILED, CANCELED). The status has Open
// false; its State is UNKNOWN when history has no row for it, or still
// lists it as live (a closed statement cannot be running).
func (c *Client) Settle(ctx context.Context, retry sources.Retry, ref sources.Ref) (sources.Status, error) {
	if retry == nil {
		retry = sources.Once
	}
	closed := false
	st := sources.Status{State: model.StateUnknown, Open: &closed, Source: model.StatusViaHistory}
	req := sql.ListQueryHistoryRequest{FilterBy: &sql.QueryFilter{StatementIds: []string{ref.StatementID}}, MaxResults: 10}
	var resp *sql.ListQueriesResponse
	err := retry(ctx, CallListQueries, func(ctx context.Context) error {
		r, err := c.history.List(ctx, req)
		resp = r
		return c.wrapErr(CallListQueries, err)
	})
	if err != nil {
		return st, err
	}
	for _, q := range resp.Res {
		if q.QueryId != ref.StatementID {
			continue
		}
		d, _ := discoveredFrom(q)
		if d.Op.State.Terminal() {
			st.State = d.Op.State
			st.CompletedAt = d.Op.CompletedAt
			st.StartedAt = d.Op.StartedAt
			st.ErrorMessage = d.Op.ServerError
		} else {
			st.Note = "query history still lists it " + string(q.Status) + " although the server has no handle"
		}
		return st, nil
	}
	st.Note = "query history has no row for it"
	return st, nil
}
