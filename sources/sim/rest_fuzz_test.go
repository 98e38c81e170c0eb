package sim

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzListQueries feeds arbitrary query strings (filters, max_results,
// page_token: remote input) to the Query History handler: it answers 200
// or 400, never panics.
func FuzzListQueries(f *testing.F) {
	s := startSim(f, Options{Logger: slog.New(slog.DiscardHandler)})
	ss := s.store.openSession(s.WarehouseIDs()[0], "alice@example.com", "Tableau", KindExternal, true)
	for i := 0; i < 3; i++ {
		s.store.execute(ss, "SELECT 1", planStatement("SELECT 1", 0, 1), true, nil)
	}
	for _, q := range []string{
		"", "max_results=1", "max_results=0", "max_results=1001", "page_token=%%%", "page_token=MTox",
		"filter_by.statuses=RUNNING&filter_by.statuses=FAILED", "filter_by.user_ids=x",
		"filter_by.query_start_time_range.start_time_ms=1&filter_by.query_start_time_range.end_time_ms=9999999999999",
		"filter_by.warehouse_ids=" + s.WarehouseIDs()[0] + "&max_results=2",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := httptest.NewRequest("GET", "/api/2.0/sql/history/queries", nil)
		r.URL.RawQuery = rawQuery
		w := httptest.NewRecorder()
		s.listQueries(w, r)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("query %q: status %d", rawQuery, w.Code)
		}
	})
}
