package databricks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go/apierr"

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
			"name": "ep-std", "endpoint_type": "STANDARD", "endpoint_status": map[string]any{"state": "PROVISIONING"},
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
			writeJSON(w, map[string]any{"name": name, "status": map[string]any{"indexed_row_count": n, "ready": n != 23, "message": "ok " + name}})
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
	if std.RowLimit != 320_000_000 || std.State != "PROVISIONING" || len(std.Indexes) != 2 || std.TotalRows() != 123 {
		t.Errorf("ep-std: %+v", std)
	}
	if std.Indexes[1].Ready {
		t.Errorf("ready flag lost: %+v", std.Indexes[1])
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
	if len(ws) != 1 || ws[0] != (Warehouse{ID: "wh2", Name: "ETL", State: "STOPPED"}) {
		t.Errorf("got %+v", ws)
	}
}
