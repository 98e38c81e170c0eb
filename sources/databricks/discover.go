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
// It stops at the first failed request and returns that error, so a
// permanent error costs exactly one request.
func (c *Client) Discover(ctx context.Context) ([]sources.Discovered, error) {
	now := c.now()
	seen := map[string]int{}
	var out []sources.Discovered
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
	live := &sql.QueryFilter{Statuses: liveStatuses, WarehouseIds: c.conf.Warehouses}
	if err := c.listHistory(ctx, live, add); err != nil {
		return nil, err
	}
	recent := &sql.QueryFilter{
		Statuses:     terminalStatuses,
		WarehouseIds: c.conf.Warehouses,
		QueryStartTimeRange: &sql.TimeRange{
			StartTimeMs: now.Add(-c.conf.DiscoveryWindow).UnixMilli(),
			EndTimeMs:   now.UnixMilli(),
		},
	}
	if err := c.listHistory(ctx, recent, add); err != nil {
		return nil, err
	}
	return out, nil
}

// listHistory pages through one filtered listing, one request per page.
func (c *Client) listHistory(ctx context.Context, f *sql.QueryFilter, add func(sql.QueryInfo)) error {
	req := sql.ListQueryHistoryRequest{FilterBy: f, MaxResults: c.conf.PageSize}
	for page := 0; page < c.conf.MaxPages; page++ {
		resp, err := c.history.List(ctx, req)
		if err != nil {
			return c.wrapErr(CallListQueries, err)
		}
		for _, q := range resp.Res {
			add(q)
		}
		if !resp.HasNextPage || resp.NextPageToken == "" {
			return nil
		}
		// Same filter with the token: a stateless server re-applies it.
		req.PageToken = resp.NextPageToken
	}
	return nil
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
