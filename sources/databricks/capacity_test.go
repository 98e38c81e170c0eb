package databricks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go/apierr"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// vsWorkspace serves two endpoints: "ep-full" (tagged limit 1000, one
// index at 990 rows, upserts refused) and "ep-std" (no tag: STANDARD
// default; two indexes on two pages).
func vsWorkspace(t *testing.T) (*fakeWS, *[]string) {
	f := newFakeWS(t)
	var upserts []string
	f.handle("GET /api/2.0/vector-search/endpoints", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page_token") == "" {
			writeJSON(w, map[string]any{"endpoints": []map[string]any{{
				"name": "ep-full", "endpoint_type": "STANDARD", "num_indexes": 1,
				"endpoint_status": map[string]any{"state": "ONLINE"},
				"custom_tags":     []map[string]any{{"key": "team", "value": "x"}, {"key": "dbxtop_row_limit", "value": "1_000"}},
			}}, "next_page_token": "e2"})
			return
		}
		writeJSON(w, map[string]any{"endpoints": []map[string]any{{
			"name": "ep-std", "endpoint_type": "STANDARD", "endpoint_status": map[string]any{"state": "PROVISIONING", "message": "Endpoint is being provisioned."},
			"throughput_info": map[string]any{"current_concurrency_utilization_percentage": 37.5, "current_concurrency": 3},
		}}})
	})
	f.handle("GET /api/2.0/vector-search/indexes", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case q.Get("endpoint_name") == "ep-full":
			writeJSON(w, map[string]any{"vector_indexes": []map[string]any{{"name": "main.v.full_idx", "endpoint_name": "ep-full"}}})
		case q.Get("endpoint_name") == "ep-std" && q.Get("page_token") == "":
			writeJSON(w, map[string]any{"vector_indexes": []map[string]any{{"name": "main.v.a"}}, "next_page_token": "i2"})
		case q.Get("endpoint_name") == "ep-std":
			writeJSON(w, map[string]any{"vector_indexes": []map[string]any{{"name": "main.v.b"}}})
		default:
			t.Errorf("unexpected ListIndexes %s", r.URL.RawQuery)
		}
	})
	rows := map[string]int64{"main.v.full_idx": 990, "main.v.a": 100, "main.v.b": 23}
	for name, n := range rows {
		name, n := name, n
		f.handle("GET /api/2.0/vector-search/indexes/"+name, func(w http.ResponseWriter, r *http.Request) {
			body := map[string]any{"name": name, "status": map[string]any{"indexed_row_count": n, "ready": n != 23, "message": "ok " + name}}
			switch name {
			case "main.v.full_idx":
				body["index_type"] = "DIRECT_ACCESS"
			case "main.v.a":
				body["index_type"] = "DELTA_SYNC"
				body["delta_sync_index_spec"] = map[string]any{"embedding_vector_columns": []map[string]any{{"name": "v", "embedding_dimension": 1536}}}
			case "main.v.b":
				body["index_type"] = "DIRECT_ACCESS"
				body["direct_access_index_spec"] = map[string]any{"embedding_vector_columns": []map[string]any{{"name": "v", "embedding_dimension": 1024}, {"name": "w", "embedding_dimension": 8}}}
			}
			writeJSON(w, body)
		})
	}
	f.handle("POST /api/2.0/vector-search/indexes/main.v.full_idx/upsert-data", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			InputsJSON string `json:"inputs_json"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		upserts = append(upserts, body.InputsJSON)
		writeError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Endpoint ep-full has reached its capacity limit.", "req-full")
	})
	return f, &upserts
}

func TestEndpointsIndexesAndRowLimits(t *testing.T) {
	f, _ := vsWorkspace(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := f.client(t, func(c *Config) { c.Now = func() time.Time { return now } })
	eps, err := c.Endpoints(context.Background(), nil)
	if err != nil {
		t.Fatalf("Endpoints: %v", err)
	}
	if len(eps) != 2 {
		t.Fatalf("want 2 endpoints, got %+v", eps)
	}
	full, std := eps[0], eps[1]
	if full.Name != "ep-full" || full.RowLimit != 1000 || full.State != "ONLINE" || full.TotalRows() != 990 {
		t.Errorf("ep-full: %+v", full)
	}
	if len(full.Indexes) != 1 || full.Indexes[0].Message != "ok main.v.full_idx" || !full.Indexes[0].Ready {
		t.Errorf("ep-full indexes: %+v", full.Indexes)
	}
	// 100 Delta Sync rows at 1536 dims (160 M) + 23 Direct Access rows (2 M).
	share := 100.0/160_000_000 + 23.0/2_000_000
	if want := int64(123 / share); std.RowLimit != want || std.State != "PROVISIONING" || len(std.Indexes) != 2 || std.TotalRows() != 123 {
		t.Errorf("ep-std: %+v", std)
	}
	if std.Indexes[1].Ready {
		t.Errorf("ready flag lost: %+v", std.Indexes[1])
	}
	// What the endpoint holds decides the published limit; the tag wins
	// over it; state message, num_indexes and throughput_info are kept.
	if full.RowLimitSource != model.LimitTag || full.TagLimit != 1000 || full.NumIndexes != 1 {
		t.Errorf("ep-full limit: %d %q (tag %d)", full.RowLimit, full.RowLimitSource, full.TagLimit)
	}
	a, b := std.Indexes[0], std.Indexes[1]
	if a.Type != model.IndexDeltaSync || a.Dimension != 1536 || b.Type != model.IndexDirectAccess || b.Dimension != 1024 {
		t.Errorf("index types/dimensions: %+v %+v", a, b)
	}
	if std.RowLimitSource != model.LimitPublished || std.RowLimitWhy == "" {
		t.Errorf("ep-std limit %d %q %q", std.RowLimit, std.RowLimitSource, std.RowLimitWhy)
	}
	if std.Throughput == nil || *std.Throughput != 37.5 || full.Throughput != nil {
		t.Errorf("throughput %v %v", std.Throughput, full.Throughput)
	}
	if std.StateMessage != "Endpoint is being provisioned." {
		t.Errorf("state message %q", std.StateMessage)
	}
	if len(full.Samples) != 1 || full.Samples[0].Rows != 990 || !full.Samples[0].At.Equal(now) || !full.ObservedAt.Equal(now) {
		t.Errorf("sample: %+v", full.Samples)
	}
}

func TestProbeIsOneEmptyUpsertAndReturnsExhausted(t *testing.T) {
	f, upserts := vsWorkspace(t)
	c := f.client(t)
	if _, err := c.Endpoints(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	before := f.total()
	err := c.Probe(context.Background(), "ep-full")
	if f.total()-before != 1 {
		t.Fatalf("probe made %d requests, want exactly 1 upsert", f.total()-before)
	}
	if len(*upserts) != 1 || (*upserts)[0] != "[]" {
		t.Fatalf("upserts %q: want one with inputs_json \"[]\"", *upserts)
	}
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.Call != CallUpsertData || he.ErrorCode != "RESOURCE_EXHAUSTED" || he.RequestID != "req-full" {
		t.Fatalf("want RESOURCE_EXHAUSTED HTTPError from the upsert, got %v", err)
	}
	if !errors.Is(err, apierr.ErrResourceExhausted) {
		t.Errorf("cause lost")
	}
	mustContain(t, he.Message, "capacity limit")
}

func TestProbeWithoutPriorListingFindsTheIndex(t *testing.T) {
	f, upserts := vsWorkspace(t)
	c := f.client(t)
	err := c.Probe(context.Background(), "ep-full")
	if err == nil || len(*upserts) != 1 {
		t.Fatalf("want one refused upsert, got err=%v upserts=%v", err, *upserts)
	}
	if f.count("GET /api/2.0/vector-search/indexes") != 1 {
		t.Errorf("want one ListIndexes to find the index")
	}
}

func TestEndpointsFailureNamesTheCall(t *testing.T) {
	f, _ := vsWorkspace(t)
	f.handle("GET /api/2.0/vector-search/indexes/main.v.a", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusBadGateway, "", "", "")
	})
	c := f.client(t)
	_, err := c.Endpoints(context.Background(), nil)
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.Call != CallGetIndex || he.StatusCode != 502 {
		t.Fatalf("want 502 from GetIndex, got %v", err)
	}
	if f.count("GET /api/2.0/vector-search/indexes/main.v.a") != 1 {
		t.Errorf("the SDK retried")
	}
}

func TestWarehousesFiltered(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/warehouses", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"warehouses": []map[string]any{
			{"id": "wh1", "name": "Shared", "state": "RUNNING"},
			{"id": "wh2", "name": "ETL", "state": "STOPPED"},
		}})
	})
	c := f.client(t, func(c *Config) { c.Warehouses = []string{"wh2"} })
	ws, err := c.Warehouses(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A stopped warehouse's 0 clusters is a count; no minimum or maximum
	// was listed.
	if len(ws) != 1 || ws[0].ID != "wh2" || ws[0].Name != "ETL" || ws[0].State != "STOPPED" ||
		ws[0].Clusters == nil || *ws[0].Clusters != 0 || ws[0].MinClusters != nil || ws[0].MaxClusters != nil {
		t.Errorf("got %+v", ws)
	}
}

// The listing's size and cluster counts reach the gate's listing (the
// Warehouses view).
func TestWarehouseListingCarriesSizes(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/warehouses", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"warehouses": []map[string]any{
			{"id": "wh1", "name": "Shared", "state": "RUNNING", "cluster_size": "Small", "num_clusters": 2, "min_num_clusters": 1, "max_num_clusters": 4},
		}})
	})
	c := f.client(t)
	if err := c.RefreshGate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	l, ok := c.WarehouseListing()
	if !ok || len(l.Warehouses) != 1 {
		t.Fatalf("listing %+v", l)
	}
	w := l.Warehouses[0]
	if w.Name != "Shared" || w.Size != "Small" || *w.Clusters != 2 || *w.MinClusters != 1 || *w.MaxClusters != 4 {
		t.Errorf("got %+v", w)
	}
}

// FuzzDecodeEndpoint: any listing entry decodes or fails cleanly, and a
// decoded one becomes an endpoint whose limit resolves without panicking.
func FuzzDecodeEndpoint(f *testing.F) {
	f.Add([]byte(`{"name":"vs-endpoint-1","endpoint_type":"STANDARD","num_indexes":7,"endpoint_status":{"state":"ONLINE","message":"ok"},"throughput_info":{"current_concurrency_utilization_percentage":41},"custom_tags":[{"key":"dbxtop_row_limit","value":"1_000"}]}`))
	f.Add([]byte(`{"name":"x","throughput_info":{"current_concurrency_utilization_percentage":"high"}}`))
	f.Add([]byte(`{"endpoint_type":"STORAGE_OPTIMIZED","throughput_info":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ei, err := decodeEndpoint(raw)
		if err != nil {
			return
		}
		ep := endpointFrom(ei).WithRowLimit()
		if ep.RowLimit < 0 {
			t.Fatalf("negative limit %d", ep.RowLimit)
		}
	})
}
