package databricks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/databricks/databricks-sdk-go/apierr"
	"github.com/databricks/databricks-sdk-go/common"
	"github.com/databricks/databricks-sdk-go/service/sql"
	"github.com/databricks/databricks-sdk-go/useragent"
	"github.com/google/go-querystring/query"
)

// historyPage is one query-history answer, decoded by decodeHistoryPage
// rather than the SDK's QueryInfo decoder, which normalises every field of
// every row by reflection: far too slow for the live listing's pages
// (docs/performance.md). Only the fields dbxtop reads are kept; the
// request is the SDK's (historyList).
type historyPage struct {
	HasNextPage   bool         `json:"has_next_page"`
	NextPageToken string       `json:"next_page_token"`
	Res           []historyRow `json:"res"`
}

type historyRow struct {
	QueryID            string  `json:"query_id"`
	Status             string  `json:"status"`
	QueryText          string  `json:"query_text"`
	UserName           string  `json:"user_name"`
	ExecutedAsUserName string  `json:"executed_as_user_name"`
	WarehouseID        string  `json:"warehouse_id"`
	EndpointID         string  `json:"endpoint_id"`
	ClientApplication  string  `json:"client_application"`
	QueryStartTimeMs   flexInt `json:"query_start_time_ms"`
	QueryEndTimeMs     flexInt `json:"query_end_time_ms"`
	ExecutionEndTimeMs flexInt `json:"execution_end_time_ms"`
	ErrorMessage       string  `json:"error_message"`
}

// flexInt accepts a JSON number or a number in a string, as the API's
// int64 fields may be sent either way (what the SDK normalises).
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if len(b) == 0 || string(b) == "null" {
		*f = 0
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return err
	}
	*f = flexInt(n)
	return nil
}

func (r *historyRow) info() sql.QueryInfo {
	return sql.QueryInfo{
		QueryId: r.QueryID, Status: sql.QueryStatus(r.Status), QueryText: r.QueryText,
		UserName: r.UserName, ExecutedAsUserName: r.ExecutedAsUserName,
		WarehouseId: r.WarehouseID, EndpointId: r.EndpointID, ClientApplication: r.ClientApplication,
		QueryStartTimeMs: int64(r.QueryStartTimeMs), QueryEndTimeMs: int64(r.QueryEndTimeMs),
		ExecutionEndTimeMs: int64(r.ExecutionEndTimeMs), ErrorMessage: r.ErrorMessage,
	}
}

// historyList makes ONE query-history request and decodes it as a
// historyPage. The request is the SDK's: its query encoding of req
// (go-querystring, nested keys in dot notation), its auth
// (config.Authenticate), its user agent, its transport (sdkTransport: the
// answer's size bound, fresh connections on request) and its error type
// (apierr.GetAPIError, so wrapErr reads error_code, request id and
// Retry-After as from any SDK call). Only the read differs: the SDK's
// client reads every JSON answer with io.ReadAll (growing from a small
// buffer, zeroing each step) before handing it over, the largest driver of
// garbage collection at scale. Here the answer is read into a pooled
// buffer that keeps its capacity from page to page.
func (c *Client) historyList(ctx context.Context, req sql.ListQueryHistoryRequest) (*historyPage, error) {
	q, err := historyQuery(req)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, c.host+"/api/2.0/sql/history/queries?"+q, nil)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Accept", "application/json")
	if id := c.sdk.WorkspaceID; id != "" {
		r.Header.Set("X-Databricks-Workspace-Id", id)
	}
	if err := c.sdk.Authenticate(r); err != nil {
		return nil, err
	}
	r.Header.Set("User-Agent", useragent.FromContext(ctx))
	if err := c.pageRate.Wait(ctx); err != nil {
		return nil, err
	}
	resp, err := c.pages.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		w, werr := common.NewResponseWrapper(resp, common.RequestBody{})
		if werr != nil {
			return nil, werr
		}
		if aerr := apierr.GetAPIError(ctx, w); aerr != nil {
			return nil, aerr
		}
		return nil, fmt.Errorf("unexpected HTTP %d for a query-history page", resp.StatusCode)
	}
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledPage { // an outsized answer is not kept for the next
			pageBuffers.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	return decodeHistoryPage(buf.Bytes()) // nothing it returns points into buf
}

// pageBuffers hold query-history answers while they are decoded; a
// buffer grown past maxPooledPage by an unusual answer (up to MaxBody) is
// left to the collector.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledPage = 4 << 20

// historyQuery encodes req as the SDK does for a GET: go-querystring's
// values of its url tags, "filter_by[statuses]" written
// "filter_by.statuses".
func historyQuery(req sql.ListQueryHistoryRequest) (string, error) {
	v, err := query.Values(req)
	if err != nil {
		return "", fmt.Errorf("cannot create query string: %w", err)
	}
	out := make(url.Values, len(v))
	for k, vs := range v {
		k = strings.ReplaceAll(strings.ReplaceAll(k, "[", "."), "]", "")
		out[k] = append(out[k], vs...)
	}
	return out.Encode(), nil
}

// decodeHistoryPage decodes one answer in one pass of its own
// (decodePageFast): without reflection, without copying the answer, and
// allocating only the strings a row keeps: it earns its place by the
// TUI's CPU at scale (docs/performance.md). b is the caller's pooled
// buffer, reused once this returns: nothing returned points into it
// (TestDecodedPageOwnsItsStrings). An answer outside the fast decoder's
// subset is decoded by encoding/json, whose verdict and error stand;
// FuzzDecodeHistoryPage checks that the two agree.
func decodeHistoryPage(b []byte) (*historyPage, error) {
	var p historyPage
	if decodePageFast(b, &p) {
		return &p, nil
	}
	p = historyPage{} // what the fast decoder decoded before it gave up
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("failed to unmarshal response body: %w", err) // the SDK's words for it
	}
	return &p, nil
}
