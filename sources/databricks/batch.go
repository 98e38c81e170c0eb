package databricks

import (
	"context"
	"strings"

	"github.com/databricks/databricks-sdk-go/service/sql"

	"github.com/dbxtop/dbxtop/sources"
)

// BatchLimit is how many statement ids one StatusBatch request carries.
// Query history pages hold up to 1,000 rows, but the ids travel in the
// URL (filter_by.statement_ids repeated, 61 bytes each): 120 ids keep a
// request under 8 KB, a limit common to HTTP front ends. One request
// still confirms 120 operations.
const BatchLimit = 120

// LivePageSize is max_results of one page of the live listing: the
// largest page query history serves (max_results < 1000).
const LivePageSize = 999

// ListLive reads ONE page of query history's live statements (QUEUED,
// RUNNING) within the warehouse filter, newest first; token "" asks for
// the first page, and the returned token is "" after the last. Every
// statement listed is live as of the answer: one request confirms up to
// 999 operations. The engine looks up by id (StatusBatch) the live
// operations a listing did not show: they ended, or history has not
// caught up.
func (c *Client) ListLive(ctx context.Context, token string, dst []sources.Discovered) ([]sources.Discovered, string, error) {
	req := sql.ListQueryHistoryRequest{
		FilterBy:   &sql.QueryFilter{Statuses: liveStatuses, WarehouseIds: c.conf.Warehouses},
		MaxResults: LivePageSize,
		PageToken:  token,
	}
	resp, err := c.historyList(ctx, req)
	if err != nil {
		return nil, "", c.wrapErr(CallListQueries, err)
	}
	out := dst[:0]
	if cap(out) < len(resp.Res) {
		out = make([]sources.Discovered, 0, len(resp.Res)) // not grown row by row
	}
	for i := range resp.Res {
		if d, ok := discoveredFrom(resp.Res[i].info()); ok {
			out = append(out, d)
		}
	}
	next := ""
	if resp.HasNextPage {
		next = resp.NextPageToken
	}
	return out, next, nil
}

// BatchLimit reports how many refs one StatusBatch call may carry.
func (c *Client) BatchLimit() int { return BatchLimit }

// StatusBatch asks query history, in ONE request, for the statements of
// refs (at most BatchLimit) and returns the status of each statement it
// lists, by statement id. Query history lists statements whatever
// protocol or client ran them, and needs no handle secret, so this works
// on a strict server for every statement; a statement it does not list
// (history lags the engine, or forgot it) is simply absent from the map.
// Openness and the owning client's activity are not in query history:
// those stay with the per-operation calls.
func (c *Client) StatusBatch(ctx context.Context, refs []sources.Ref) (map[string]sources.Status, error) {
	if len(refs) > BatchLimit {
		refs = refs[:BatchLimit] // the engine chunks; never a request over the bound
	}
	ids := make([]string, 0, len(refs))
	for _, r := range refs {
		if r.StatementID != "" {
			ids = append(ids, strings.ToLower(r.StatementID))
		}
	}
	out := make(map[string]sources.Status, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	req := sql.ListQueryHistoryRequest{
		FilterBy:   &sql.QueryFilter{StatementIds: ids},
		MaxResults: len(ids),
	}
	resp, err := c.historyList(ctx, req)
	if err != nil {
		return nil, c.wrapErr(CallListQueries, err)
	}
	for i := range resp.Res {
		d, ok := discoveredFrom(resp.Res[i].info())
		if !ok {
			continue
		}
		out[strings.ToLower(d.Ref.StatementID)] = sources.ListedStatus(&d.Op)
	}
	return out, nil
}
