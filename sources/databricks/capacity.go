package databricks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/databricks/databricks-sdk-go/service/vectorsearch"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// SDK method names of the Vector Search calls.
const (
	CallListEndpoints = "ListEndpoints"
	CallListIndexes   = "ListIndexes"
	CallGetIndex      = "GetIndex"
	CallUpsertData    = "UpsertDataVectorIndex"
)

// endpointInfo is the SDK's EndpointInfo plus throughput_info, which the
// REST API returns but databricks-sdk-go v0.182.0 does not model.
type endpointInfo struct {
	vectorsearch.EndpointInfo
	Throughput *float64
}

// listEndpoints pages through GET /api/2.0/vector-search/endpoints, keeping
// each raw entry so that throughput_info is read as well as the SDK's
// fields. Each page goes through retry on its own; the listing is bounded
// by the page cap and the repeated-token check, and stopping early is an
// error (a *sources.TruncatedError): capacity is not shown partial.
func (c *Client) listEndpoints(ctx context.Context, retry sources.Retry) ([]endpointInfo, error) {
	var out []endpointInfo
	token := ""
	pager := sources.Pager{Call: CallListEndpoints, What: "endpoints", MaxPages: c.conf.MaxPages, Now: c.now}
	for {
		var resp struct {
			Endpoints     []json.RawMessage `json:"endpoints"`
			NextPageToken string            `json:"next_page_token"`
		}
		q := map[string]any{}
		if token != "" {
			q["page_token"] = token
		}
		err := retry(ctx, CallListEndpoints, func(ctx context.Context) error {
			resp.Endpoints, resp.NextPageToken = nil, ""
			return c.wrapErr(CallListEndpoints, c.dc.Do(ctx, http.MethodGet, "/api/2.0/vector-search/endpoints", map[string]string{"Accept": "application/json"}, q, nil, &resp))
		})
		if err != nil {
			return nil, err
		}
		for _, raw := range resp.Endpoints {
			ei, err := decodeEndpoint(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: decoding an endpoint: %w", CallListEndpoints, err)
			}
			out = append(out, ei)
		}
		more, trunc := pager.Next(resp.NextPageToken, len(out))
		if trunc != nil {
			return nil, trunc
		}
		if !more {
			return out, nil
		}
		token = resp.NextPageToken
	}
}

// decodeEndpoint reads one entry of the endpoint listing: the SDK's fields
// and throughput_info.current_concurrency_utilization_percentage.
func decodeEndpoint(raw []byte) (endpointInfo, error) {
	var ei endpointInfo
	var extra struct {
		ThroughputInfo *struct {
			Pct *float64 `json:"current_concurrency_utilization_percentage"`
		} `json:"throughput_info"`
	}
	if err := json.Unmarshal(raw, &ei.EndpointInfo); err != nil {
		return ei, err
	}
	// A malformed throughput_info costs only the throughput figure.
	if json.Unmarshal(raw, &extra) == nil && extra.ThroughputInfo != nil {
		ei.Throughput = extra.ThroughputInfo.Pct
	}
	return ei, nil
}

// Endpoints lists Vector Search endpoints with their indexes' row counts,
// types and dimensions: ListEndpoints (paged), then per endpoint
// ListIndexes and GetIndex per index (the listing carries no status). The
// row limit is resolved from what the endpoint holds and its custom tag
// dbxtop_row_limit (model.ResolveRowLimit); the poller adds the config
// file's and learned limits. Each request goes through retry on its own.
// The first failed request ends the call with its error: a partial
// capacity picture would understate usage (the engine keeps the last
// complete one, marked with its age and this error).
func (c *Client) Endpoints(ctx context.Context, retry sources.Retry) ([]model.Endpoint, error) {
	if retry == nil {
		retry = sources.Once
	}
	now := c.now()
	infos, err := c.listEndpoints(ctx, retry)
	if err != nil {
		return nil, err
	}
	out := make([]model.Endpoint, 0, len(infos))
	first := map[string]string{}
	for _, info := range infos {
		ep := endpointFrom(info)
		ixs, err := c.endpointIndexes(ctx, retry, info.Name)
		if err != nil {
			return nil, err
		}
		ep.Indexes = ixs
		first[info.Name] = firstDirect(ixs)
		ep.ObservedAt = now
		ep.Samples = []model.Sample{{At: now, Rows: ep.TotalRows()}}
		out = append(out, ep.WithRowLimit())
	}
	c.mu.Lock()
	c.firstIndex = first
	c.mu.Unlock()
	return out, nil
}

func (c *Client) endpointIndexes(ctx context.Context, retry sources.Retry, endpoint string) ([]model.Index, error) {
	names, err := c.indexNames(ctx, retry, endpoint)
	if err != nil {
		return nil, err
	}
	out := make([]model.Index, 0, len(names))
	for _, name := range names {
		var vi *vectorsearch.VectorIndex
		err := retry(ctx, CallGetIndex, func(ctx context.Context) error {
			v, err := c.indexes.GetIndex(ctx, vectorsearch.GetIndexRequest{IndexName: name})
			vi = v
			return c.wrapErr(CallGetIndex, err)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, indexFrom(name, vi))
	}
	return out, nil
}

// indexNames pages through ListIndexes (each page through retry, within
// the page cap and the repeated-token check).
func (c *Client) indexNames(ctx context.Context, retry sources.Retry, endpoint string) ([]string, error) {
	var names []string
	pager := sources.Pager{Call: CallListIndexes, What: "indexes", MaxPages: c.conf.MaxPages, Now: c.now}
	req := vectorsearch.ListIndexesRequest{EndpointName: endpoint}
	for {
		var resp vectorsearch.ListVectorIndexesResponse
		err := retry(ctx, CallListIndexes, func(ctx context.Context) error {
			resp = vectorsearch.ListVectorIndexesResponse{}
			return c.wrapErr(CallListIndexes, c.getJSON(ctx, "/api/2.0/vector-search/indexes", req, &resp))
		})
		if err != nil {
			return nil, err
		}
		for _, mi := range resp.VectorIndexes {
			if mi.Name != "" {
				names = append(names, mi.Name)
			}
		}
		more, trunc := pager.Next(resp.NextPageToken, len(names))
		if trunc != nil {
			return nil, trunc
		}
		if !more {
			return names, nil
		}
		req.PageToken = resp.NextPageToken
	}
}

// Probe sends one empty upsert (inputs_json "[]") to the endpoint's first
// Direct Vector Access index (the only kind upsert-data serves; Delta Sync
// indexes are written by their pipeline). Whether a real full endpoint
// refuses an empty upsert is not known (docs/capacity.md); the simulator
// does. A refusal is returned as a *sources.HTTPError for the engine to
// mark the endpoint; an endpoint without such an index is skipped with
// sources.ErrProbeSkipped, and nothing is sent.
func (c *Client) Probe(ctx context.Context, endpoint string) error {
	c.mu.Lock()
	index, ok := c.firstIndex[endpoint]
	c.mu.Unlock()
	if !ok {
		ixs, err := c.endpointIndexes(ctx, sources.Once, endpoint)
		if err != nil {
			return err
		}
		index = firstDirect(ixs)
	}
	if index == "" {
		return fmt.Errorf("%w: %s holds no Direct Vector Access index (upserts serve only those; Delta Sync indexes are written by their pipeline)",
			sources.ErrProbeSkipped, endpoint)
	}
	_, err := c.indexes.UpsertDataVectorIndex(ctx, vectorsearch.UpsertDataVectorIndexRequest{IndexName: index, InputsJson: "[]"})
	return c.wrapErr(CallUpsertData, err)
}

// firstDirect is the first Direct Vector Access index ("" when none).
func firstDirect(ixs []model.Index) string {
	for _, ix := range ixs {
		if ix.Type == model.IndexDirectAccess {
			return ix.Name
		}
	}
	return ""
}

func endpointFrom(info endpointInfo) model.Endpoint {
	ep := model.Endpoint{Name: info.Name, Type: string(info.EndpointType), NumIndexes: info.NumIndexes, Throughput: info.Throughput}
	if info.EndpointStatus != nil {
		ep.State = string(info.EndpointStatus.State)
		ep.StateMessage = info.EndpointStatus.Message
	}
	if n, ok := rowLimitTag(info.CustomTags); ok {
		ep.TagLimit = n
	}
	return ep
}

// rowLimitTag reads the dbxtop_row_limit custom tag: a positive integer,
// digits with optional "_" or "," separators ("320_000_000").
func rowLimitTag(tags []vectorsearch.CustomTag) (int64, bool) {
	for _, t := range tags {
		if t.Key != model.RowLimitTag {
			continue
		}
		v := strings.NewReplacer("_", "", ",", "").Replace(strings.TrimSpace(t.Value))
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

func indexFrom(name string, vi *vectorsearch.VectorIndex) model.Index {
	ix := model.Index{Name: name}
	if vi == nil {
		return ix
	}
	if vi.Name != "" {
		ix.Name = vi.Name
	}
	ix.Type = string(vi.IndexType)
	var cols []vectorsearch.EmbeddingVectorColumn
	switch {
	case vi.DirectAccessIndexSpec != nil:
		cols = vi.DirectAccessIndexSpec.EmbeddingVectorColumns
	case vi.DeltaSyncIndexSpec != nil:
		cols = vi.DeltaSyncIndexSpec.EmbeddingVectorColumns
	}
	// The largest vector column decides the storage per row.
	for _, col := range cols {
		ix.Dimension = max(ix.Dimension, col.EmbeddingDimension)
	}
	if vi.Status != nil {
		ix.Rows = vi.Status.IndexedRowCount
		ix.Ready = vi.Status.Ready
		ix.Message = vi.Status.Message
	}
	return ix
}
