package databricks

import (
	"context"
	"strconv"
	"strings"

	"github.com/databricks/databricks-sdk-go/service/vectorsearch"

	"github.com/dbxtop/dbxtop/model"
)

// SDK method names of the Vector Search calls.
const (
	CallListEndpoints = "ListEndpoints"
	CallListIndexes   = "ListIndexes"
	CallGetIndex      = "GetIndex"
	CallUpsertData    = "UpsertDataVectorIndex"
)

// Endpoints lists Vector Search endpoints with their indexes' row counts:
// ListEndpoints (paged), then per endpoint ListIndexes and GetIndex per
// index (the listing carries no status). The row limit is the endpoint's
// custom tag dbxtop_row_limit when present, else the published default for
// its type. The first failed request ends the call with its error: a
// partial capacity picture would understate usage.
func (c *Client) Endpoints(ctx context.Context) ([]model.Endpoint, error) {
	now := c.now()
	var infos []vectorsearch.EndpointInfo
	it := c.endpoints.ListEndpoints(ctx, vectorsearch.ListEndpointsRequest{})
	for it.HasNext(ctx) {
		info, err := it.Next(ctx)
		if err != nil {
			return nil, c.wrapErr(CallListEndpoints, err)
		}
		infos = append(infos, info)
	}
	out := make([]model.Endpoint, 0, len(infos))
	first := map[string]string{}
	for _, info := range infos {
		ep := endpointFrom(info)
		ixs, err := c.endpointIndexes(ctx, info.Name)
		if err != nil {
			return nil, err
		}
		ep.Indexes = ixs
		if len(ixs) > 0 {
			first[info.Name] = ixs[0].Name
		}
		ep.ObservedAt = now
		ep.Samples = []model.Sample{{At: now, Rows: ep.TotalRows()}}
		out = append(out, ep)
	}
	c.mu.Lock()
	c.firstIndex = first
	c.mu.Unlock()
	return out, nil
}

func (c *Client) endpointIndexes(ctx context.Context, endpoint string) ([]model.Index, error) {
	names, err := c.indexNames(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	out := make([]model.Index, 0, len(names))
	for _, name := range names {
		vi, err := c.indexes.GetIndex(ctx, vectorsearch.GetIndexRequest{IndexName: name})
		if err != nil {
			return nil, c.wrapErr(CallGetIndex, err)
		}
		out = append(out, indexFrom(name, vi))
	}
	return out, nil
}

func (c *Client) indexNames(ctx context.Context, endpoint string) ([]string, error) {
	var names []string
	it := c.indexes.ListIndexes(ctx, vectorsearch.ListIndexesRequest{EndpointName: endpoint})
	for it.HasNext(ctx) {
		mi, err := it.Next(ctx)
		if err != nil {
			return nil, c.wrapErr(CallListIndexes, err)
		}
		if mi.Name != "" {
			names = append(names, mi.Name)
		}
	}
	return names, nil
}

// Probe sends one empty upsert (inputs_json "[]") to the endpoint's first
// index: a full endpoint answers 429 RESOURCE_EXHAUSTED within that one
// request, returned as a *sources.HTTPError for the engine to mark the
// endpoint. An endpoint without indexes has nothing to probe (nil).
func (c *Client) Probe(ctx context.Context, endpoint string) error {
	c.mu.Lock()
	index, ok := c.firstIndex[endpoint]
	c.mu.Unlock()
	if !ok {
		names, err := c.indexNames(ctx, endpoint)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		index = names[0]
	}
	_, err := c.indexes.UpsertDataVectorIndex(ctx, vectorsearch.UpsertDataVectorIndexRequest{IndexName: index, InputsJson: "[]"})
	return c.wrapErr(CallUpsertData, err)
}

func endpointFrom(info vectorsearch.EndpointInfo) model.Endpoint {
	ep := model.Endpoint{Name: info.Name, Type: string(info.EndpointType)}
	if info.EndpointStatus != nil {
		ep.State = string(info.EndpointStatus.State)
	}
	ep.RowLimit = model.DefaultRowLimit(ep.Type)
	if n, ok := rowLimitTag(info.CustomTags); ok {
		ep.RowLimit = n
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
	if vi.Status != nil {
		ix.Rows = vi.Status.IndexedRowCount
		ix.Ready = vi.Status.Ready
		ix.Message = vi.Status.Message
	}
	return ix
}
