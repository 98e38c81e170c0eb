package databricks

import (
	"context"
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

// Endpoints lists Vector Search endpoints with their indexes' row counts:
// ListEndpoints (every page), then per endpoint ListIndexes (every page)
// and GetIndex per index (the listing carries no status). Each request
// goes through retry on its own, and every listing is bounded by the page
// cap and the repeated-token check. The row limit is the endpoint's custom
// tag dbxtop_row_limit when present, else the published default for its
// type. The first failed request ends the call with its error: a partial
// capacity picture would understate usage (the engine keeps the last
// complete one, marked with its age and this error).
func (c *Client) Endpoints(ctx context.Context, retry sources.Retry) ([]model.Endpoint, error) {
	if retry == nil {
		retry = sources.Once
	}
	now := c.now()
	var infos []vectorsearch.EndpointInfo
	pager := sources.Pager{Call: CallListEndpoints, What: "endpoints", MaxPages: c.conf.MaxPages, Now: c.now}
	req := vectorsearch.ListEndpointsRequest{}
	for {
		var resp vectorsearch.ListEndpointResponse
		err := retry(ctx, CallListEndpoints, func(ctx context.Context) error {
			resp = vectorsearch.ListEndpointResponse{}
			return c.wrapErr(CallListEndpoints, c.getJSON(ctx, "/api/2.0/vector-search/endpoints", req, &resp))
		})
		if err != nil {
			return nil, err
		}
		infos = append(infos, resp.Endpoints...)
		more, trunc := pager.Next(resp.NextPageToken, len(infos))
		if trunc != nil {
			return nil, trunc
		}
		if !more {
			break
		}
		req.PageToken = resp.NextPageToken
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
// index: a full endpoint answers 429 RESOURCE_EXHAUSTED within that one
// request, returned as a *sources.HTTPError for the engine to mark the
// endpoint. An endpoint without indexes has nothing to probe (nil).
func (c *Client) Probe(ctx context.Context, endpoint string) error {
	c.mu.Lock()
	index, ok := c.firstIndex[endpoint]
	c.mu.Unlock()
	if !ok {
		names, err := c.indexNames(ctx, sources.Once, endpoint)
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
