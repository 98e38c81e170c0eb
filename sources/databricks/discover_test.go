package databricks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go/apierr"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

func TestDiscoverFiltersPagingAndMapping(t *testing.T) {
	f := newFakeWS(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var queries []string
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		queries = append(queries, r.URL.RawQuery)
		statuses := strings.Join(q["filter_by.statuses"], ",")
		switch {
		case statuses == "QUEUED,RUNNING" && q.Get("page_token") == "":
			writeJSON(w, map[string]any{
				"has_next_page": true, "next_page_token": "p+2",
				"res": []map[string]any{{
					"query_id": "01ef-aaaa", "status": "RUNNING", "query_text": "SELECT sleep(600)",
					"user_name": "alice@example.com", "warehouse_id": "wh1", "client_application": "Tableau",
					"query_start_time_ms": now.Add(-5 * time.Minute).UnixMilli(),
				}},
			})
		case statuses == "QUEUED,RUNNING" && q.Get("page_token") == "p+2":
			writeJSON(w, map[string]any{"res": []map[string]any{{
				"query_id": "01ef-bbbb", "status": "QUEUED", "endpoint_id": "wh2", "executed_as_user_name": "etl-svc",
			}, {"status": "RUNNING"}}}) // the row without an id is skipped
		case statuses == "FINISHED,FAILED,CANCELED":
			if q.Get("filter_by.query_start_time_range.start_time_ms") != strconv.FormatInt(now.Add(-30*time.Minute).UnixMilli(), 10) ||
				q.Get("filter_by.query_start_time_range.end_time_ms") != strconv.FormatInt(now.UnixMilli(), 10) {
				t.Errorf("terminal listing without the discovery window: %s", r.URL.RawQuery)
			}
			writeJSON(w, map[string]any{"res": []map[string]any{{
				"query_id": "01ef-cccc", "status": "FAILED", "warehouse_id": "wh1",
				"error_message":       "Query has been timed out due to inactivity.",
				"query_start_time_ms": now.Add(-20 * time.Minute).UnixMilli(),
				"query_end_time_ms":   now.Add(-10 * time.Minute).UnixMilli(),
			}, {
				// Seen live and then finished between the two listings: one entry, fresher state.
				"query_id": "01ef-aaaa", "status": "FINISHED", "warehouse_id": "wh1",
			}}})
		default:
			t.Errorf("unexpected query history request %s", r.URL.RawQuery)
			writeJSON(w, map[string]any{})
		}
	})
	f.handle("GET /api/2.0/sql/warehouses", func(w http.ResponseWriter, r *http.Request) {
		// The selection names listed warehouses (one that names none is
		// an error: TestWarehouseListingCountsVisibleAndMatched).
		writeJSON(w, map[string]any{"warehouses": []map[string]any{{"id": "wh1", "state": "RUNNING"}, {"id": "wh2", "state": "RUNNING"}}})
	})
	c := f.client(t, func(c *Config) {
		c.Warehouses = []string{"wh1", "wh2"}
		c.Now = func() time.Time { return now }
		c.PageSize = 2000 // invalid: must fall back below 1000
	})
	got, err := c.Discover(context.Background(), nil)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(queries) != 3 {
		t.Fatalf("want 3 requests (2 live pages + terminal), got %d: %v", len(queries), queries)
	}
	for _, q := range queries {
		mustContain(t, q, "filter_by.warehouse_ids=wh1", "filter_by.warehouse_ids=wh2", "max_results=500")
	}
	mustContain(t, queries[1], "page_token=p%2B2")
	if len(got) != 3 {
		t.Fatalf("want 3 operations, got %d: %+v", len(got), got)
	}
	a := got[0]
	if a.Ref.StatementID != "01ef-aaaa" || a.Ref.WarehouseID != "wh1" || a.Op.State != model.StateFinished {
		t.Errorf("dedup kept the stale entry: %+v", a)
	}
	b := got[1]
	if b.Op.WarehouseID != "wh2" || b.Op.User != "etl-svc" || b.Op.State != model.StatePending {
		t.Errorf("endpoint_id / executed_as fallback: %+v", b.Op)
	}
	cc := got[2]
	if cc.Op.State != model.StateFailed || !strings.Contains(cc.Op.ServerError, "timed out due to inactivity") ||
		!cc.Op.StartedAt.Equal(now.Add(-20*time.Minute)) || !cc.Op.CompletedAt.Equal(now.Add(-10*time.Minute)) {
		t.Errorf("failed op mapping: %+v", cc.Op)
	}
	if cc.Op.ClientActivityKnown {
		t.Errorf("query history cannot know client activity")
	}
	req := f.last()
	if ua := req.Header.Get("User-Agent"); !strings.HasPrefix(ua, "dbxtop/test ") || !strings.Contains(ua, "databricks-sdk-go/") {
		t.Errorf("User-Agent %q: want dbxtop/ first, then the SDK's", ua)
	}
}

func TestDiscoverQuotaIsOneRequestWithCodeAndRequestID(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Workspace quota exceeded.", "9b0c2a44-0000-4000-8000-000000000001")
	})
	c := f.client(t)
	_, err := c.Discover(context.Background(), nil)
	if err == nil {
		t.Fatal("want an error")
	}
	if n := f.count("GET /api/2.0/sql/history/queries"); n != 1 {
		t.Fatalf("the SDK retried: %d requests, want exactly 1", n)
	}
	var he *sources.HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("want *sources.HTTPError, got %T %v", err, err)
	}
	if he.Call != CallListQueries || he.StatusCode != 429 || he.ErrorCode != "RESOURCE_EXHAUSTED" || he.RequestID != "9b0c2a44-0000-4000-8000-000000000001" {
		t.Errorf("HTTPError fields: %+v", he)
	}
	if !errors.Is(err, apierr.ErrResourceExhausted) {
		t.Errorf("cause lost: errors.Is(err, apierr.ErrResourceExhausted) is false")
	}
	mustContain(t, err.Error(), "ListQueries", "429", "RESOURCE_EXHAUSTED", "9b0c2a44-0000-4000-8000-000000000001")
}

func TestThrottleCarriesRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header string
		detail string
		want   time.Duration
		has    bool
	}{
		{name: "seconds", header: "1", want: time.Second, has: true},
		{name: "http-date", header: now.Add(3 * time.Second).Format(http.TimeFormat), want: 3 * time.Second, has: true},
		{name: "retry-info", detail: "2.5s", want: 2500 * time.Millisecond, has: true},
		{name: "bare", has: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeWS(t)
			f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				details := []map[string]any{{"@type": "type.googleapis.com/google.rpc.RequestInfo", "request_id": "req-1"}}
				if tc.detail != "" {
					details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retry_delay": tc.detail})
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				writeJSON(w, map[string]any{"error_code": "REQUEST_LIMIT_EXCEEDED", "message": "slow down", "details": details})
			})
			c := f.client(t, func(c *Config) { c.Now = func() time.Time { return now } })
			_, err := c.Discover(context.Background(), nil)
			var he *sources.HTTPError
			if !errors.As(err, &he) {
				t.Fatalf("want HTTPError, got %v", err)
			}
			if f.total() != 1 {
				t.Fatalf("%d requests: the SDK retried a throttle", f.total())
			}
			if he.HasRetryAfter != tc.has || he.RetryAfter != tc.want {
				t.Errorf("RetryAfter = %v/%v, want %v/%v", he.RetryAfter, he.HasRetryAfter, tc.want, tc.has)
			}
			if he.ErrorCode != "REQUEST_LIMIT_EXCEEDED" || he.RequestID != "req-1" {
				t.Errorf("fields: %+v", he)
			}
		})
	}
}

func TestWrongTokenSaysCredentialsRefusedWithoutToken(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{})
	})
	const wrong = "dapi-wrong-token-must-not-leak"
	c := f.client(t, func(c *Config) { c.Token = wrong })
	_, err := c.Discover(context.Background(), nil)
	if err == nil {
		t.Fatal("want an error")
	}
	if f.total() != 1 {
		t.Fatalf("%d requests, want 1", f.total())
	}
	var he *sources.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 401 {
		t.Fatalf("want HTTP 401 HTTPError, got %v", err)
	}
	mustContain(t, err.Error(), "credentials were refused", f.srv.URL, "11111111-2222-4333-8444-555555555555")
	mustNotContain(t, err.Error(), wrong)
	mustNotContain(t, he.Body, wrong)
}

func TestTransportResetIsOneAttemptAndKeepsCause(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		resetConn(t, w)
	})
	c := f.client(t)
	_, err := c.Discover(context.Background(), nil)
	if err == nil {
		t.Fatal("want an error")
	}
	// net/http may replay an idempotent GET once on its own when a reused
	// connection dies; the first request is on a fresh connection, so the
	// server must see exactly one.
	if n := f.count("GET /api/2.0/sql/history/queries"); n != 1 {
		t.Fatalf("%d requests: the SDK retried a reset (want 1)", n)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cause lost: %v", err)
	}
	mustContain(t, err.Error(), "ListQueries", "transport")
	mustNotContain(t, err.Error(), "connection reset by peer") // the SDK's retry trigger
}

func TestContextCanceledIsReturnedAsSuch(t *testing.T) {
	f := newFakeWS(t)
	block := make(chan struct{})
	arrived := make(chan struct{}, 1)
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	defer close(block)
	c := f.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Discover(ctx, nil); errc <- err }()
	<-arrived
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled in the chain, got %v", err)
	}
}

// The warehouse listing tells an empty workspace from a selection that
// names none of its warehouses: Visible counts every warehouse listed
// (all pages), Matched those the selection kept. Nothing is said before a
// listing succeeded, and a failed listing keeps the last good answer.
func TestWarehouseListingCountsVisibleAndMatched(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/warehouses", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page_token") == "" {
			writeJSON(w, map[string]any{"warehouses": []map[string]any{{"id": "wh1", "state": "RUNNING"}}, "next_page_token": "p2"})
			return
		}
		writeJSON(w, map[string]any{"warehouses": []map[string]any{{"id": "wh2", "state": "STOPPED"}}})
	})
	for _, tc := range []struct {
		sel              []string
		visible, matched int
	}{{nil, 2, 2}, {[]string{"wh2"}, 2, 1}, {[]string{"nope"}, 2, 0}} {
		c := f.client(t, func(c *Config) { c.Warehouses = tc.sel })
		if _, ok := c.WarehouseListing(); ok {
			t.Fatal("a listing is reported before any was made")
		}
		err := c.RefreshGate(context.Background(), nil)
		var nm *sources.NoMatchError
		if tc.matched == 0 {
			// A selection naming none of the listed warehouses is an
			// error naming both (the gate is fed all the same).
			want := "--warehouse nope matches none of the 2 SQL warehouses the workspace lists (wh1, wh2)"
			if !errors.As(err, &nm) || !strings.HasPrefix(err.Error(), want) || nm.Call != CallListWarehouses {
				t.Errorf("selection %v: %v, want a NoMatchError starting %q", tc.sel, err, want)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		l, ok := c.WarehouseListing()
		if !ok || l.Visible != tc.visible || l.Matched != tc.matched || l.At.IsZero() {
			t.Errorf("selection %v: listing %+v ok=%v, want visible %d matched %d", tc.sel, l, ok, tc.visible, tc.matched)
		}
	}

	empty := newFakeWS(t) // answers with no warehouse
	c := empty.client(t)
	if err := c.RefreshGate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if l, ok := c.WarehouseListing(); !ok || l.Visible != 0 || l.Matched != 0 {
		t.Errorf("empty workspace: %+v ok=%v", l, ok)
	}
	empty.handle("GET /api/2.0/sql/warehouses", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "boom", "")
	})
	if err := c.RefreshGate(context.Background(), nil); err == nil {
		t.Fatal("a failing listing did not fail")
	}
	if l, ok := c.WarehouseListing(); !ok || l.Visible != 0 {
		t.Errorf("after a failed listing: %+v ok=%v, want the last good answer", l, ok)
	}
}

// A narrowed discovery makes only the listings its scope keeps (and
// refreshes the warehouse gate whatever the scope).
func TestDiscoverScopeMakesOnlyItsListings(t *testing.T) {
	f := newFakeWS(t)
	var live, finished, gate int
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		if strings.Join(r.URL.Query()["filter_by.statuses"], ",") == "QUEUED,RUNNING" {
			live++
			writeJSON(w, map[string]any{"res": []map[string]any{{"query_id": "01ef-live", "status": "RUNNING"}}})
			return
		}
		finished++
		writeJSON(w, map[string]any{"res": []map[string]any{{"query_id": "01ef-done", "status": "FINISHED"}}})
	})
	f.handle("GET /api/2.0/sql/warehouses", func(w http.ResponseWriter, r *http.Request) {
		gate++
		writeJSON(w, map[string]any{"warehouses": []map[string]any{{"id": "wh1", "state": "RUNNING"}}})
	})
	c := f.client(t)
	for _, tc := range []struct {
		scope                sources.Scope
		live, finished, want int
	}{
		{sources.Scope{}, 1, 1, 2},
		{sources.Scope{NoLive: true}, 0, 1, 1},
		{sources.Scope{NoFinished: true}, 1, 0, 1},
		{sources.Scope{NoLive: true, NoFinished: true}, 0, 0, 0},
	} {
		live, finished, gate = 0, 0, 0
		got, err := c.DiscoverScope(context.Background(), nil, tc.scope)
		if err != nil {
			t.Fatalf("%+v: %v", tc.scope, err)
		}
		if live != tc.live || finished != tc.finished || gate != 1 || len(got) != tc.want {
			t.Errorf("%+v: %d live and %d finished listings, %d warehouse listings, %d operations; want %d, %d, 1, %d",
				tc.scope, live, finished, gate, len(got), tc.live, tc.finished, tc.want)
		}
	}
}
