package sim

import (
	"strconv"
	"testing"
	"time"
)

func TestRESTStatementCloseAndHistoryFilters(t *testing.T) {
	clk := NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	// StatementAPIForThrift: the statements under test run over Thrift.
	s := startSim(t, Options{Clock: clk, ReapEvery: time.Hour, StatementAPIForThrift: true})
	c := httpClient(t)
	ss := s.store.openSession(s.WarehouseIDs()[0], "bob@example.com", "dbt", KindExternal, true)
	early := s.store.execute(ss, "SELECT 1", planStatement("SELECT 1", 0, 1), true, nil)
	clk.Advance(time.Minute)
	late := s.store.execute(ss, "SELECT 2", planStatement("SELECT 2", 0, 1), true, nil)
	base := s.URL() + "/api/2.0/sql/statements/"

	// DELETE closes; a second DELETE is 404; GET then says CLOSED.
	if r := mustDo(t, c, "DELETE", base+late.id, s.Token(), "", ""); r.status != 200 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if r := mustDo(t, c, "DELETE", base+late.id, s.Token(), "", ""); r.status != 404 {
		t.Errorf("second DELETE: %d %s", r.status, r.body)
	}
	var st statementResponse
	mustDo(t, c, "GET", base+late.id, s.Token(), "", "").json(t, &st)
	if st.Status.State != "CLOSED" || st.StatementID != late.id {
		t.Errorf("GET after close: %+v", st)
	}
	if tr := getTruth(t, s); tr.Operations[0].State != "CLOSED" || tr.Operations[0].Open {
		t.Errorf("truth after DELETE: %+v", tr.Operations[0])
	}

	// Time range: only the early statement started before early+30s.
	from := strconv.FormatInt(early.created.UnixMilli(), 10)
	to := strconv.FormatInt(early.created.Add(30*time.Second).UnixMilli(), 10)
	var h listQueriesResponse
	mustDo(t, c, "GET", s.URL()+"/api/2.0/sql/history/queries?filter_by.query_start_time_range.start_time_ms="+from+
		"&filter_by.query_start_time_range.end_time_ms="+to, s.Token(), "", "").json(t, &h)
	if len(h.Res) != 1 || h.Res[0].QueryID != early.id || h.Res[0].Status != "FINISHED" {
		t.Errorf("time range filter: %+v", h.Res)
	}
	// statement_ids filter, and a closed statement keeps its final status.
	mustDo(t, c, "GET", s.URL()+"/api/2.0/sql/history/queries?filter_by.statement_ids="+late.id, s.Token(), "", "").json(t, &h)
	if len(h.Res) != 1 || h.Res[0].QueryID != late.id || h.Res[0].Status != "FINISHED" || !h.Res[0].IsFinal {
		t.Errorf("statement_ids filter: %+v", h.Res)
	}
	for _, bad := range []string{"max_results=5000", "page_token=!!", "filter_by.user_ids=bob"} {
		if r := mustDo(t, c, "GET", s.URL()+"/api/2.0/sql/history/queries?"+bad, s.Token(), "", ""); r.status != 400 {
			t.Errorf("%s: %d", bad, r.status)
		}
	}
	// Cancel over REST of a finished statement changes nothing; unknown is 404.
	if r := mustDo(t, c, "POST", base+early.id+"/cancel", s.Token(), "", ""); r.status != 200 {
		t.Errorf("cancel: %d", r.status)
	}
	if r := mustDo(t, c, "POST", base+"00000000-0000-4000-8000-000000000000/cancel", s.Token(), "", ""); r.status != 404 {
		t.Errorf("cancel unknown: %d", r.status)
	}
}
