package sim

import (
	"encoding/json"
	"testing"
	"time"
)

// TestVectorIncidentScenario: the writer fills vs-endpoint-1 from
// 1,560,002 rows to exactly its real limit 1,984,112 in two minutes of
// timeline, by batches of 5; then every upsert gets the recorded 429 body;
// vs-endpoint-2 has room; nothing carries a row-limit tag.
func TestVectorIncidentScenario(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	clk := NewManualClock(t0)
	s := startSim(t, Options{Scenario: ScenarioVectorIncident, Clock: clk})
	c := httpClient(t)
	get := func(path string, v any) {
		t.Helper()
		r := mustDo(t, c, "GET", s.URL()+path, s.Token(), "", "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		r.json(t, v)
	}
	var list struct {
		Endpoints []struct {
			Name         string `json:"name"`
			EndpointType string `json:"endpoint_type"`
			NumIndexes   int    `json:"num_indexes"`
			CustomTags   []struct {
				Key string `json:"key"`
			} `json:"custom_tags"`
			Throughput struct {
				Pct float64 `json:"current_concurrency_utilization_percentage"`
			} `json:"throughput_info"`
		} `json:"endpoints"`
	}
	get("/api/2.0/vector-search/endpoints", &list)
	if len(list.Endpoints) != 2 || list.Endpoints[0].Name != IncidentEndpoint || list.Endpoints[1].Name != IncidentSpare {
		t.Fatalf("endpoints %+v", list.Endpoints)
	}
	for _, e := range list.Endpoints {
		if e.EndpointType != "STANDARD" || e.Throughput.Pct <= 0 {
			t.Errorf("endpoint %+v", e)
		}
		for _, tag := range e.CustomTags {
			if tag.Key == RowLimitTag {
				t.Errorf("%s carries a row-limit tag", e.Name)
			}
		}
	}
	if list.Endpoints[0].NumIndexes != 7 {
		t.Errorf("num_indexes %d, want 7", list.Endpoints[0].NumIndexes)
	}
	var ix struct {
		IndexType string `json:"index_type"`
		Spec      struct {
			Cols []struct {
				Dim int `json:"embedding_dimension"`
			} `json:"embedding_vector_columns"`
		} `json:"direct_access_index_spec"`
		Status struct {
			Rows  int64 `json:"indexed_row_count"`
			Ready bool  `json:"ready"`
		} `json:"status"`
	}
	get("/api/2.0/vector-search/indexes/reg.docs.gdpr_idx", &ix)
	if ix.IndexType != "DIRECT_ACCESS" || len(ix.Spec.Cols) != 1 || ix.Spec.Cols[0].Dim != IncidentDimension ||
		ix.Status.Rows < 100_000 || ix.Status.Rows > 999_999 || !ix.Status.Ready {
		t.Errorf("index %+v", ix)
	}
	rows := func() int64 {
		ep, _ := s.vec.endpoint(IncidentEndpoint)
		return ep.Rows
	}
	if r := rows(); r != IncidentStartRows {
		t.Fatalf("start rows %d", r)
	}
	clk.Advance(time.Minute)
	if r := rows(); r < 1_770_000 || r > 1_774_000 || (r-IncidentStartRows)%IncidentBatch != 0 {
		t.Errorf("after 1 min: %d rows", r)
	}
	clk.Advance(time.Minute - time.Second)
	if r := rows(); r >= IncidentRowLimit {
		t.Errorf("full before two minutes: %d", r)
	}
	upsert := func() reply {
		return mustDo(t, c, "POST", s.URL()+"/api/2.0/vector-search/indexes/reg.docs.gdpr_idx/upsert-data", s.Token(), "", `{"inputs_json":"[]"}`)
	}
	if r := upsert(); r.status != 200 {
		t.Fatalf("upsert before full: %d %s", r.status, r.body)
	}
	clk.Advance(2 * time.Second)
	if r := rows(); r != IncidentRowLimit {
		t.Fatalf("after two minutes: %d rows, want %d", r, IncidentRowLimit)
	}
	r := upsert()
	var body struct {
		ErrorCode string `json:"error_code"`
		Message   string `json:"message"`
		Details   []struct {
			Type      string `json:"@type"`
			RequestID string `json:"request_id"`
		} `json:"details"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || r.status != 429 || body.ErrorCode != "RESOURCE_EXHAUSTED" ||
		body.Message != "Endpoint capacity has reached capacity limit. You can delete some data or the index to free up space. Or contact support to increase your quota." ||
		len(body.Details) != 1 || body.Details[0].RequestID == "" {
		t.Fatalf("full endpoint answered %d %s", r.status, r.body)
	}
	st := s.Stats().Writer
	if st == nil || st.BatchesAccepted != (IncidentRowLimit-IncidentStartRows)/IncidentBatch || st.BatchesRefused != 1 || st.BatchRows != 5 {
		t.Errorf("writer stats %+v", st)
	}
	for _, e := range s.Truth().Endpoints {
		switch e.Name {
		case IncidentEndpoint:
			// The refused batch was due right at the two-minute mark.
			if !e.Exhausted || e.FirstRefusedAt == nil || e.FirstRefusedAt.Sub(t0) < 2*time.Minute || e.FirstRefusedAt.Sub(t0) > 2*time.Minute+10*time.Millisecond {
				t.Errorf("truth %+v", e)
			}
		case IncidentSpare:
			if e.Exhausted || e.Rows > e.RowLimit/2 {
				t.Errorf("spare endpoint %+v", e)
			}
		}
	}
}
