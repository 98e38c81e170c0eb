package sim

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// JSON shapes below use the databricks-sdk-go field names (service/sql) so
// the stock SDK types decode every answer.

type queryInfo struct {
	QueryID            string `json:"query_id"`
	Status             string `json:"status"`
	StatementType      string `json:"statement_type,omitempty"`
	QueryText          string `json:"query_text"`
	UserID             int64  `json:"user_id,omitempty"`
	UserName           string `json:"user_name,omitempty"`
	ExecutedAsUserID   int64  `json:"executed_as_user_id,omitempty"`
	ExecutedAsUserName string `json:"executed_as_user_name,omitempty"`
	WarehouseID        string `json:"warehouse_id"`
	EndpointID         string `json:"endpoint_id"`
	ClientApplication  string `json:"client_application,omitempty"`
	QueryStartTimeMs   int64  `json:"query_start_time_ms"`
	ExecutionEndTimeMs int64  `json:"execution_end_time_ms,omitempty"`
	QueryEndTimeMs     int64  `json:"query_end_time_ms,omitempty"`
	Duration           int64  `json:"duration,omitempty"`
	ErrorMessage       string `json:"error_message,omitempty"`
	RowsProduced       int64  `json:"rows_produced,omitempty"`
	IsFinal            bool   `json:"is_final"`
	SessionID          string `json:"session_id,omitempty"`
}

type listQueriesResponse struct {
	HasNextPage   bool        `json:"has_next_page"`
	NextPageToken string      `json:"next_page_token,omitempty"`
	Res           []queryInfo `json:"res"`
}

// historyStatus maps an execution state to a Query History status.
func historyStatus(s model.State) string {
	switch s {
	case model.StatePending:
		return "QUEUED"
	case model.StateRunning:
		return "RUNNING"
	case model.StateFinished:
		return "FINISHED"
	case model.StateFailed:
		return "FAILED"
	case model.StateCanceled:
		return "CANCELED"
	}
	return "FAILED"
}

// userID is a stable positive id for a user name.
func userID(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64()>>12) + 1
}

func encodeCursor(v opView) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(v.Created.UnixNano(), 10) + ":" + v.ID))
}

func decodeCursor(tok string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, "", err
	}
	ns, id, ok := strings.Cut(string(b), ":")
	if !ok {
		return 0, "", fmt.Errorf("malformed")
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	return n, id, err
}

func badParam(w http.ResponseWriter, msg string) {
	writeAPIError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", msg)
}

// listQueries is GET /api/2.0/sql/history/queries: filters, newest first,
// paged with an opaque cursor token.
func (s *Server) listQueries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	max := 100
	if v := q.Get("max_results"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			badParam(w, "max_results must be an integer between 1 and 1000, got "+strconv.Quote(v))
			return
		}
		max = n
	}
	statuses := q["filter_by.statuses"]
	whs := q["filter_by.warehouse_ids"]
	ids := q["filter_by.statement_ids"]
	var users []int64
	for _, u := range q["filter_by.user_ids"] {
		n, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			badParam(w, "filter_by.user_ids: "+strconv.Quote(u)+" is not an integer")
			return
		}
		users = append(users, n)
	}
	var from, to int64 = 0, 0
	for key, dst := range map[string]*int64{
		"filter_by.query_start_time_range.start_time_ms": &from,
		"filter_by.query_start_time_range.end_time_ms":   &to,
	} {
		if v := q.Get(key); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				badParam(w, key+": "+strconv.Quote(v)+" is not an integer")
				return
			}
			*dst = n
		}
	}
	hq := &historyQuery{statuses: statuses, warehouses: whs, ids: ids, users: users, from: from, to: to, max: max}
	if tok := q.Get("page_token"); tok != "" {
		n, id, err := decodeCursor(tok)
		if err != nil {
			badParam(w, "page_token is invalid")
			return
		}
		hq.cursor, hq.curNS, hq.curID = true, n, id
	}
	rows, more := s.store.history(hq, s.o.HistoryLag)
	resp := listQueriesResponse{Res: make([]queryInfo, 0, len(rows))}
	for _, v := range rows {
		resp.Res = append(resp.Res, queryInfoOf(v, historyStatus(v.State)))
	}
	if more {
		resp.HasNextPage = true
		resp.NextPageToken = encodeCursor(hq.lastView)
	}
	writeJSON(w, resp)
}

func queryInfoOf(v opView, status string) queryInfo {
	qi := queryInfo{
		QueryID: v.ID, Status: status, StatementType: statementType(v.SQL), QueryText: v.SQL,
		UserID: userID(v.User), UserName: v.User, ExecutedAsUserID: userID(v.User), ExecutedAsUserName: v.User,
		WarehouseID: v.Warehouse, EndpointID: v.Warehouse, ClientApplication: v.App,
		QueryStartTimeMs: v.Created.UnixMilli(), ErrorMessage: v.ErrMsg, RowsProduced: v.Rows,
		SessionID: v.SessionID,
	}
	if v.State.Terminal() && !v.Completed.IsZero() {
		qi.ExecutionEndTimeMs = v.Completed.UnixMilli()
		qi.QueryEndTimeMs = v.Completed.UnixMilli()
		qi.Duration = v.Completed.Sub(v.Created).Milliseconds()
		qi.IsFinal = true
	}
	return qi
}

// ---- Statement Execution API -------------------------------------------

type serviceError struct {
	ErrorCode string `json:"error_code,omitempty"`
	Message   string `json:"message,omitempty"`
}

type statementStatus struct {
	State string        `json:"state"`
	Error *serviceError `json:"error,omitempty"`
}

type statementResponse struct {
	StatementID string          `json:"statement_id"`
	Status      statementStatus `json:"status"`
}

var seaStates = map[model.State]string{
	model.StatePending:  "PENDING",
	model.StateRunning:  "RUNNING",
	model.StateFinished: "SUCCEEDED",
	model.StateFailed:   "FAILED",
	model.StateCanceled: "CANCELED",
}

func notFoundStatement(w http.ResponseWriter, id string) {
	writeAPIError(w, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST",
		"Statement "+id+" does not exist, or was closed and forgotten.")
}

// statementOp finds the operation of a REST statement id. The API knows
// only statements run through it (the simulator runs none that way), so
// every Thrift-run statement is unknown to it unless
// Options.StatementAPIForThrift.
func (s *Server) statementOp(w http.ResponseWriter, r *http.Request) (guid, string, bool) {
	id := strings.ToLower(r.PathValue("stmt"))
	g, ok := s.store.lookupID(id)
	ok = ok && s.o.StatementAPIForThrift
	if !ok {
		notFoundStatement(w, id)
	}
	return g, id, ok
}

// statementWarehouse is the warehouse a statement id runs on ("" when
// unknown), for the scripted faults.
func (s *Server) statementWarehouse(id string) string {
	g, ok := s.store.lookupID(strings.ToLower(id))
	if !ok {
		return ""
	}
	wh := ""
	s.store.withOp(g, false, func(op *operation, _ time.Time) { wh = op.warehouse })
	return wh
}

func (s *Server) getStatement(w http.ResponseWriter, r *http.Request) {
	g, id, ok := s.statementOp(w, r)
	if !ok {
		return
	}
	var resp statementResponse
	s.store.withOp(g, false, func(op *operation, _ time.Time) {
		resp = statementResponse{StatementID: id, Status: statementStatus{State: seaStates[op.state]}}
		if !op.open && op.state == model.StateFinished {
			resp.Status.State = "CLOSED"
		}
		switch op.state {
		case model.StateFailed:
			resp.Status.Error = &serviceError{ErrorCode: "UNKNOWN", Message: op.errMsg}
		case model.StateCanceled:
			resp.Status.Error = &serviceError{ErrorCode: "CANCELLED", Message: op.errMsg}
		}
	})
	writeJSON(w, resp)
}

func (s *Server) cancelStatement(w http.ResponseWriter, r *http.Request) {
	g, _, ok := s.statementOp(w, r)
	if !ok {
		return
	}
	s.store.withOp(g, false, func(op *operation, now time.Time) { s.store.cancelLocked(op, now) })
	writeJSON(w, struct{}{})
}

// closeStatement is DELETE /api/2.0/sql/statements/{id}, how the SEA
// clients close. A statement already closed is gone: 404.
func (s *Server) closeStatement(w http.ResponseWriter, r *http.Request) {
	g, id, ok := s.statementOp(w, r)
	if !ok {
		return
	}
	ci := callFrom(r.Context())
	if ci.observer && s.scriptedObserverCloseFails(g) {
		s.count(&s.faults, FaultUnavailable)
		s.inject(w, FaultUnavailable, 0)
		return
	}
	closed := false
	s.store.withOp(g, false, func(op *operation, now time.Time) {
		if op.open {
			s.store.closeLocked(op, now)
			closed = true
		}
	})
	if !closed {
		notFoundStatement(w, id)
		return
	}
	writeJSON(w, struct{}{})
}

// ---- warehouses ------------------------------------------------------------

type odbcParams struct {
	Hostname string `json:"hostname"`
	Path     string `json:"path"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
}

type warehouseInfo struct {
	ID                      string     `json:"id"`
	Name                    string     `json:"name"`
	State                   string     `json:"state"`
	ClusterSize             string     `json:"cluster_size"`
	NumClusters             int        `json:"num_clusters"`
	MinNumClusters          int        `json:"min_num_clusters"`
	MaxNumClusters          int        `json:"max_num_clusters"`
	AutoStopMins            int        `json:"auto_stop_mins"`
	WarehouseType           string     `json:"warehouse_type"`
	EnableServerlessCompute bool       `json:"enable_serverless_compute"`
	EnablePhoton            bool       `json:"enable_photon"`
	NumActiveSessions       int64      `json:"num_active_sessions"`
	CreatorName             string     `json:"creator_name"`
	JdbcURL                 string     `json:"jdbc_url"`
	OdbcParams              odbcParams `json:"odbc_params"`
}

func (s *Server) listWarehouses(w http.ResponseWriter, r *http.Request) {
	host := strings.TrimPrefix(s.url, "http://")
	hostname, port, _ := strings.Cut(host, ":")
	p, _ := strconv.Atoi(port)
	out := struct {
		Warehouses []warehouseInfo `json:"warehouses"`
	}{Warehouses: []warehouseInfo{}}
	for _, wh := range s.warehouses {
		path := "/sql/1.0/warehouses/" + wh.id
		out.Warehouses = append(out.Warehouses, warehouseInfo{
			ID: wh.id, Name: wh.name, State: s.WarehouseState(wh.id), ClusterSize: wh.size, NumClusters: 1,
			MinNumClusters: 1, MaxNumClusters: 2, AutoStopMins: autoStopMins(s.o.AutoStop), WarehouseType: "PRO",
			EnableServerlessCompute: true, EnablePhoton: true, CreatorName: "admin@example.com",
			JdbcURL:    "jdbc:databricks://" + host + ";transportMode=http;httpPath=" + path,
			OdbcParams: odbcParams{Hostname: hostname, Path: path, Port: p, Protocol: "http"},
		})
	}
	writeJSON(w, out)
}
