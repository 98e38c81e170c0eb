package sim

import (
	"strings"
	"testing"
	"time"
)

// Options.Latency: every draw within ±20 % and spread over that range; an
// answer never comes before the lower bound (a floor, not a speed test).
func TestLatencyJitter(t *testing.T) {
	const lat = 40 * time.Millisecond
	s := startSim(t, Options{Latency: lat})
	lo, hi := lat, time.Duration(0)
	for i := 0; i < 2000; i++ {
		d := s.latency()
		if d < lat*8/10 || d > lat*12/10 {
			t.Fatalf("draw %d: %v outside %v ± 20 %%", i, d, lat)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo > lat*85/100 || hi < lat*115/100 {
		t.Errorf("draws span only [%v, %v]: jitter should cover %v ± 20 %%", lo, hi, lat)
	}
	c := httpClient(t)
	start := time.Now()
	r := mustDo(t, c, "GET", s.URL()+"/api/2.0/sql/warehouses", s.Token(), "", "")
	if r.status != 200 {
		t.Fatalf("ListWarehouses: %d %s", r.status, r.body)
	}
	if el := time.Since(start); el < lat*8/10 {
		t.Errorf("answered after %v, before the latency floor %v", el, lat*8/10)
	}
	// /sim/v1 is not the workspace: no latency, and never counted as a fault.
	if st := getStats(t, s); st.Faults[FaultLatency] != 0 {
		t.Errorf("latency counted as a fault: %v", st.Faults)
	}
}

// observer_requests counts dbxtop's (and its proxy's) calls by name, apart
// from the clients'; requests still counts everything.
func TestStatsObserverRequests(t *testing.T) {
	s := startSim(t, Options{})
	c := httpClient(t)
	url := s.URL() + "/api/2.0/sql/history/queries"
	for _, ua := range []string{"dbxtop/1.2.3 (linux)", "Go-http-client/1.1 dbxtop-proxy/0.1", "simclient/1.0 (healthy)", "databricks-sdk-go/0.182.0", "notdbxtop/1"} {
		if r := mustDo(t, c, "GET", url, s.Token(), ua, ""); r.status != 200 {
			t.Fatalf("%s: %d %s", ua, r.status, r.body)
		}
	}
	st := getStats(t, s)
	if st.Requests["ListQueries"] != 5 || st.ObserverRequests["ListQueries"] != 2 {
		t.Errorf("requests %v, observer_requests %v; want 5 and 2 ListQueries", st.Requests, st.ObserverRequests)
	}
	r := mustDo(t, c, "GET", s.URL()+"/sim/v1/stats", s.Token(), "", "")
	if !strings.Contains(string(r.body), `"observer_requests":{`) {
		t.Errorf("stats JSON lacks observer_requests: %s", r.body)
	}
}

// Query history trails the engine by HistoryLag: a statement appears once
// it is lag old and shows the status it had lag ago, by listing and by
// statement id alike.
func TestHistoryLag(t *testing.T) {
	clk := NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	s := startSim(t, Options{Clock: clk, ReapEvery: time.Hour, HistoryLag: 5 * time.Second})
	c := httpClient(t)
	ss := s.store.openSession(s.WarehouseIDs()[0], "bob@example.com", "dbt", KindExternal, true)
	op := s.store.execute(ss, "SELECT sleep(10)", planStatement("SELECT sleep(10)", 0, 1), true, nil)
	list := func(q string) []queryInfo {
		var h listQueriesResponse
		mustDo(t, c, "GET", s.URL()+"/api/2.0/sql/history/queries"+q, s.Token(), "", "").json(t, &h)
		return h.Res
	}
	byID := "?filter_by.statement_ids=" + op.id
	steps := []struct {
		advance time.Duration
		want    string // "" = not listed
	}{
		{0, ""},
		{4 * time.Second, ""},
		{2 * time.Second, "RUNNING"},  // t=6: seen as of t=1
		{8 * time.Second, "RUNNING"},  // t=14: ended at 10, history says running (as of 9)
		{2 * time.Second, "FINISHED"}, // t=16: as of 11
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		for _, q := range []string{"", byID} {
			res := list(q)
			got := ""
			if len(res) == 1 && res[0].QueryID == op.id {
				got = res[0].Status
			} else if len(res) > 1 {
				t.Fatalf("%q: %d rows", q, len(res))
			}
			if got != st.want {
				t.Errorf("t+%v %q: history says %q, want %q", clk.Now().Sub(op.created), q, got, st.want)
			}
		}
	}
}

// Pages walk the whole history newest first without repeats, by listing
// and by statement ids, and a lookup by id costs the ids asked for.
func TestHistoryPagesAndIDs(t *testing.T) {
	clk := NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	s := startSim(t, Options{Clock: clk, ReapEvery: time.Hour})
	c := httpClient(t)
	ss := s.store.openSession(s.WarehouseIDs()[0], "bob@example.com", "dbt", KindExternal, true)
	var ids []string
	for i := 0; i < 25; i++ {
		op := s.store.execute(ss, "SELECT sleep(100)", planStatement("SELECT sleep(100)", 0, 1), true, nil)
		ids = append(ids, op.id)
		if i%3 == 0 {
			clk.Advance(time.Millisecond) // some share a start time, some do not
		}
	}
	walk := func(q string) []string {
		var got []string
		tok := ""
		for page := 0; page < 50; page++ {
			var h listQueriesResponse
			u := s.URL() + "/api/2.0/sql/history/queries?max_results=4" + q
			if tok != "" {
				u += "&page_token=" + tok
			}
			mustDo(t, c, "GET", u, s.Token(), "", "").json(t, &h)
			for _, r := range h.Res {
				got = append(got, r.QueryID)
			}
			if !h.HasNextPage {
				return got
			}
			tok = h.NextPageToken
		}
		t.Fatal("more than 50 pages")
		return nil
	}
	all := walk("")
	if len(all) != 25 || uniq(all) != 25 {
		t.Fatalf("listing walked %d rows (%d distinct), want 25", len(all), uniq(all))
	}
	q := ""
	for _, id := range ids[:10] {
		q += "&filter_by.statement_ids=" + id
	}
	q += "&filter_by.statement_ids=" + ids[0] + "&filter_by.statement_ids=00000000-0000-4000-8000-000000000000"
	some := walk(q)
	if len(some) != 10 || uniq(some) != 10 {
		t.Fatalf("statement_ids walk: %d rows (%d distinct), want 10", len(some), uniq(some))
	}
	// Same order as the listing.
	pos := map[string]int{}
	for i, id := range all {
		pos[id] = i
	}
	for i := 1; i < len(some); i++ {
		if pos[some[i]] < pos[some[i-1]] {
			t.Errorf("statement_ids rows out of the listing's order at %d", i)
		}
	}
}

func uniq(xs []string) int {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return len(m)
}
