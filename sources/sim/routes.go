package sim

import (
	"bytes"
	"io"
	"net/http"

	"github.com/dbxtop/dbxtop/sources/thrift"
)

// routes is the one mux: Thrift, REST and introspection on the same port,
// all behind the bearer token.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	rest := func(pattern, call string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			s.serve(w, r, s.newCall(r, call), nil, true, h)
		})
	}
	rest("GET /api/2.0/sql/history/queries", "ListQueries", s.listQueries)
	rest("GET /api/2.0/sql/statements/{stmt}", "GetStatement", s.getStatement)
	rest("POST /api/2.0/sql/statements/{stmt}/cancel", "CancelExecution", s.cancelStatement)
	rest("DELETE /api/2.0/sql/statements/{stmt}", "CloseStatement", s.closeStatement)
	rest("GET /api/2.0/sql/warehouses", "ListWarehouses", s.listWarehouses)
	rest("GET /api/2.0/vector-search/endpoints", "ListEndpoints", s.listEndpoints)
	rest("GET /api/2.0/vector-search/endpoints/{name}", "GetEndpoint", s.getEndpoint)
	rest("GET /api/2.0/vector-search/indexes", "ListIndexes", s.listIndexes)
	rest("GET /api/2.0/vector-search/indexes/{name}", "GetIndex", s.getIndex)
	rest("POST /api/2.0/vector-search/indexes/{name}/upsert-data", "UpsertDataVectorIndex", s.upsert)
	// databricks-sdk-go v0.182.0 sends DELETE with ?primary_keys=…; older
	// clients POST {"primary_keys": […]}.
	rest("DELETE /api/2.0/vector-search/indexes/{name}/delete-data", "DeleteDataVectorIndex", s.deleteData)
	rest("POST /api/2.0/vector-search/indexes/{name}/delete-data", "DeleteDataVectorIndex", s.deleteData)

	intro := func(pattern, call string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			s.serve(w, r, s.newCall(r, call), nil, false, h)
		})
	}
	intro("GET /sim/v1/stats", "SimStats", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, s.Stats()) })
	intro("GET /sim/v1/truth", "SimTruth", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, s.Truth()) })

	// The SDK's host discovery document is public on real workspaces too:
	// the only route without the token.
	mux.HandleFunc("GET /.well-known/databricks-config", func(w http.ResponseWriter, r *http.Request) {
		s.count(&s.requests, "HostMetadata")
		writeJSON(w, map[string]any{
			"oidc_endpoint": s.url + "/oidc",
			"workspace_id":  "1234567890123456",
			"host_type":     "workspace",
		})
	})
	mux.HandleFunc("POST /sql/1.0/warehouses/{id}", s.handleThrift)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, s.newCall(r, "NotFound"), nil, false, func(w http.ResponseWriter, r *http.Request) {
			writeAPIError(w, http.StatusNotFound, "ENDPOINT_NOT_FOUND", "No API found for '"+r.Method+" "+r.URL.Path+"'")
		})
	})
	return mux
}

// maxThriftBody bounds one RPC's request body.
const maxThriftBody = thrift.MaxMessageSize

func (s *Server) handleThrift(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxThriftBody))
	if err != nil {
		ci := s.newCall(r, "unknown")
		s.serve(w, r, ci, nil, false, func(w http.ResponseWriter, r *http.Request) {
			writeAPIError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "reading the Thrift request: "+err.Error())
		})
		return
	}
	call, perr := thrift.PeekCallName(body)
	if perr != nil {
		call = "unknown"
	}
	ci := s.newCall(r, call)
	s.serve(w, r, ci, body, true, func(w http.ResponseWriter, r *http.Request) {
		if !s.hasWarehouse(ci.warehouse) {
			writeAPIError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST",
				"SQL warehouse "+ci.warehouse+" does not exist.")
			return
		}
		if !s.admitThrift(w, ci) {
			return
		}
		if perr != nil {
			writeAPIError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "not a TBinaryProtocol message: "+perr.Error())
			return
		}
		// sources/thrift's handler runs the generated processor with the
		// request's context, which carries the callInfo.
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.thrift.ServeHTTP(w, r)
	})
}
