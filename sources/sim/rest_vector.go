package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// JSON shapes use the databricks-sdk-go service/vectorsearch field names.

type customTag struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
}

type endpointStatus struct {
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
}

type throughputInfo struct {
	CurrentConcurrency                      float64 `json:"current_concurrency"`
	CurrentConcurrencyUtilizationPercentage float64 `json:"current_concurrency_utilization_percentage"`
	MaximumConcurrencyAllowed               float64 `json:"maximum_concurrency_allowed"`
}

type endpointInfo struct {
	Name                 string         `json:"name"`
	ID                   string         `json:"id"`
	EndpointType         string         `json:"endpoint_type"`
	EndpointStatus       endpointStatus `json:"endpoint_status"`
	NumIndexes           int            `json:"num_indexes"`
	Creator              string         `json:"creator"`
	CreationTimestamp    int64          `json:"creation_timestamp"`
	LastUpdatedTimestamp int64          `json:"last_updated_timestamp"`
	LastUpdatedUser      string         `json:"last_updated_user"`
	CustomTags           []customTag    `json:"custom_tags"`
	ThroughputInfo       throughputInfo `json:"throughput_info"`
}

// maxConcurrency is every simulated endpoint's concurrency ceiling.
const maxConcurrency = 20

func endpointJSON(e endpointView) endpointInfo {
	info := endpointInfo{
		Name: e.Name, ID: e.ID, EndpointType: e.Type,
		EndpointStatus: endpointStatus{State: "ONLINE", Message: "Endpoint is online."},
		NumIndexes:     len(e.Indexes), Creator: "admin@example.com",
		CreationTimestamp: e.Created.UnixMilli(), LastUpdatedTimestamp: e.Created.UnixMilli(),
		LastUpdatedUser: "admin@example.com",
		CustomTags:      []customTag{{Key: "team", Value: "search-platform"}},
		ThroughputInfo: throughputInfo{CurrentConcurrency: e.Throughput * maxConcurrency / 100,
			CurrentConcurrencyUtilizationPercentage: e.Throughput, MaximumConcurrencyAllowed: maxConcurrency},
	}
	if e.Tagged {
		info.CustomTags = append([]customTag{{Key: RowLimitTag, Value: strconv.FormatInt(e.Limit, 10)}}, info.CustomTags...)
	}
	return info
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Endpoints []endpointInfo `json:"endpoints"`
	}{Endpoints: []endpointInfo{}}
	for _, e := range s.vec.list() {
		out.Endpoints = append(out.Endpoints, endpointJSON(e))
	}
	writeJSON(w, out)
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request) {
	e, ok := s.vec.endpoint(r.PathValue("name"))
	if !ok {
		writeAPIError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST",
			"Vector search endpoint "+r.PathValue("name")+" does not exist.")
		return
	}
	writeJSON(w, endpointJSON(e))
}

type miniIndex struct {
	Name         string `json:"name"`
	EndpointName string `json:"endpoint_name"`
	IndexType    string `json:"index_type"`
	PrimaryKey   string `json:"primary_key"`
	Creator      string `json:"creator"`
}

type embeddingVectorColumn struct {
	Name               string `json:"name"`
	EmbeddingDimension int    `json:"embedding_dimension"`
}

type directAccessSpec struct {
	EmbeddingVectorColumns []embeddingVectorColumn `json:"embedding_vector_columns"`
	SchemaJSON             string                  `json:"schema_json"`
}

type deltaSyncSpec struct {
	SourceTable            string                  `json:"source_table"`
	PipelineType           string                  `json:"pipeline_type"`
	EmbeddingVectorColumns []embeddingVectorColumn `json:"embedding_vector_columns"`
}

type indexStatus struct {
	IndexedRowCount int64  `json:"indexed_row_count"`
	Ready           bool   `json:"ready"`
	Message         string `json:"message"`
	IndexURL        string `json:"index_url,omitempty"`
}

type vectorIndex struct {
	miniIndex
	DirectAccessIndexSpec *directAccessSpec `json:"direct_access_index_spec,omitempty"`
	DeltaSyncIndexSpec    *deltaSyncSpec    `json:"delta_sync_index_spec,omitempty"`
	Status                indexStatus       `json:"status"`
}

func (s *Server) listIndexes(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("endpoint_name")
	if name == "" {
		badParam(w, "endpoint_name is required")
		return
	}
	e, ok := s.vec.endpoint(name)
	if !ok {
		writeAPIError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Vector search endpoint "+name+" does not exist.")
		return
	}
	out := struct {
		VectorIndexes []miniIndex `json:"vector_indexes"`
	}{VectorIndexes: []miniIndex{}}
	for _, ix := range e.Indexes {
		out.VectorIndexes = append(out.VectorIndexes, miniOf(ix))
	}
	writeJSON(w, out)
}

func miniOf(ix indexView) miniIndex {
	return miniIndex{Name: ix.Name, EndpointName: ix.Endpoint, IndexType: ix.Type,
		PrimaryKey: "id", Creator: "etl-svc@example.com"}
}

func (s *Server) getIndex(w http.ResponseWriter, r *http.Request) {
	ix, ok := s.vec.index(r.PathValue("name"))
	if !ok {
		writeAPIError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Vector search index "+r.PathValue("name")+" does not exist.")
		return
	}
	// A real index says nothing about its endpoint's capacity: the
	// incident's indexes were "ready" until the first refused upsert.
	vi := vectorIndex{miniIndex: miniOf(ix), Status: indexStatus{
		IndexedRowCount: ix.Rows, Ready: true, Message: "Index is ready and serving.",
		IndexURL: s.url + "/api/2.0/vector-search/indexes/" + ix.Name,
	}}
	cols := []embeddingVectorColumn{{Name: "embedding", EmbeddingDimension: ix.Dimension}}
	if ix.Type == "DELTA_SYNC" {
		vi.DeltaSyncIndexSpec = &deltaSyncSpec{SourceTable: ix.Name + "_source", PipelineType: "TRIGGERED", EmbeddingVectorColumns: cols}
	} else {
		vi.DirectAccessIndexSpec = &directAccessSpec{EmbeddingVectorColumns: cols,
			SchemaJSON: `{"id": "string", "text": "string", "embedding": "array<float>"}`}
	}
	writeJSON(w, vi)
}

// maxUpsertBody bounds one upsert request.
const maxUpsertBody = 32 << 20

func (s *Server) upsert(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputsJSON string `json:"inputs_json"`
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpsertBody))
	if err != nil {
		badParam(w, "reading the request body: "+err.Error())
		return
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			badParam(w, "request body is not JSON: "+err.Error())
			return
		}
	}
	var rows []json.RawMessage
	if req.InputsJSON != "" {
		if err := json.Unmarshal([]byte(req.InputsJSON), &rows); err != nil {
			badParam(w, "inputs_json must be a JSON array of rows: "+err.Error())
			return
		}
	}
	forced := false
	res := s.vec.upsert(r.PathValue("name"), int64(len(rows)), func(ep string) bool {
		forced = s.inj.exhausted(ep)
		return forced
	})
	s.countObserverWrite(r, res)
	switch {
	case !res.found:
		writeAPIError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Vector search index "+r.PathValue("name")+" does not exist.")
	case res.sync:
		badParam(w, fmt.Sprintf(DeltaSyncWriteMessage, r.PathValue("name")))
	case res.full:
		if forced {
			s.count(&s.faults, FaultExhausted)
		}
		writeAPIError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", ExhaustedMessage)
	default:
		status := "SUCCESS"
		if res.accepted < int64(len(rows)) {
			status = "PARTIAL_SUCCESS"
		}
		writeJSON(w, map[string]any{"status": status, "result": map[string]any{"success_row_count": res.accepted}})
	}
}

// countObserverWrite counts an observer's index data request by the
// index's type (/sim/v1/stats observer_writes).
func (s *Server) countObserverWrite(r *http.Request, res upsertResult) {
	if res.found && isObserver(r.Header.Get("User-Agent")) {
		s.count(&s.observerWrites, res.itype)
	}
}

// maxDeleteKeys bounds one delete-data request's primary keys.
const maxDeleteKeys = 100_000

// deleteData is delete-data: DELETE with primary_keys in the query
// (databricks-sdk-go), or POST {"primary_keys": […]}.
func (s *Server) deleteData(w http.ResponseWriter, r *http.Request) {
	keys := r.URL.Query()["primary_keys"]
	if r.Method == http.MethodPost {
		var req struct {
			PrimaryKeys []string `json:"primary_keys"`
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpsertBody))
		if err != nil {
			badParam(w, "reading the request body: "+err.Error())
			return
		}
		if len(body) > 0 {
			if err := json.Unmarshal(body, &req); err != nil {
				badParam(w, "request body is not JSON: "+err.Error())
				return
			}
		}
		keys = append(keys, req.PrimaryKeys...)
	}
	if len(keys) > maxDeleteKeys {
		badParam(w, fmt.Sprintf("primary_keys: at most %d keys per request", maxDeleteKeys))
		return
	}
	res := s.vec.remove(r.PathValue("name"), int64(len(keys)))
	s.countObserverWrite(r, res)
	switch {
	case !res.found:
		writeAPIError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", "Vector search index "+r.PathValue("name")+" does not exist.")
	case res.sync:
		badParam(w, fmt.Sprintf(DeltaSyncWriteMessage, r.PathValue("name")))
	default:
		status := "SUCCESS"
		var failed []string
		if res.accepted < int64(len(keys)) {
			status = "PARTIAL_SUCCESS"
			failed = keys[res.accepted:]
		}
		result := map[string]any{"success_row_count": res.accepted}
		if len(failed) > 0 {
			result["failed_primary_keys"] = failed
		}
		writeJSON(w, map[string]any{"status": status, "result": result})
	}
}
