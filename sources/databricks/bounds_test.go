package databricks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// pagedHistory serves n live statements, pageSize a page, and an empty
// terminal listing. tokenOf makes the next_page_token of page p.
func pagedHistory(t *testing.T, f *fakeWS, n int, tokenOf func(p int) string) {
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("filter_by.statuses") != "QUEUED" {
			writeJSON(w, map[string]any{"res": []any{}})
			return
		}
		size, _ := strconv.Atoi(q.Get("max_results"))
		p := 0
		if tok := q.Get("page_token"); tok != "" {
			fmt.Sscanf(tok[strings.LastIndexByte(tok, '-')+1:], "%d", &p)
		}
		var res []map[string]any
		for i := p * size; i < n && i < (p+1)*size; i++ {
			res = append(res, map[string]any{"query_id": fmt.Sprintf("q%05d", i), "status": "RUNNING", "warehouse_id": "wh"})
		}
		body := map[string]any{"res": res}
		if (p+1)*size < n {
			body["has_next_page"], body["next_page_token"] = true, tokenOf(p+1)
		}
		writeJSON(w, body)
	})
}

// Discovery reads every page of live statements: 25 pages of 100, where
// it used to stop at 10 pages without a word.
func TestDiscoverReadsEveryPage(t *testing.T) {
	f := newFakeWS(t)
	pagedHistory(t, f, 2500, func(p int) string { return "tok-" + strconv.Itoa(p) })
	c := f.client(t, func(c *Config) { c.PageSize = 100 })
	got, err := c.Discover(context.Background(), nil)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(got) != 2500 {
		t.Fatalf("discovered %d of 2500 live statements", len(got))
	}
}

// A server that repeats next_page_token is caught at once: two requests,
// the data kept, and a truncation that says why.
func TestDiscoverRepeatedPageTokenIsTruncation(t *testing.T) {
	f := newFakeWS(t)
	pagedHistory(t, f, 2500, func(int) string { return "tok-1" })
	c := f.client(t, func(c *Config) { c.PageSize = 100 })
	got, err := c.Discover(context.Background(), nil)
	var te *sources.TruncatedError
	if !errors.As(err, &te) {
		t.Fatalf("want a TruncatedError, got %v", err)
	}
	if n := f.count("GET /api/2.0/sql/history/queries"); n != 3 { // 2 live pages + the terminal listing
		t.Fatalf("%d query-history requests, want 3", n)
	}
	if len(got) != 200 || te.Seen != 200 || te.Call != CallListQueries || !strings.Contains(te.Reason, "repeated next_page_token") {
		t.Fatalf("got %d ops, truncation %+v", len(got), te)
	}
}

func TestDiscoverPageCapAndBudgetAreTruncations(t *testing.T) {
	f := newFakeWS(t)
	pagedHistory(t, f, 2500, func(p int) string { return "tok-" + strconv.Itoa(p) })
	c := f.client(t, func(c *Config) { c.PageSize = 100; c.MaxPages = 5 })
	got, err := c.Discover(context.Background(), nil)
	te, ok := sources.IsTruncated(err)
	if !ok || len(got) != 500 || te.Seen != 500 || !strings.Contains(te.Reason, "page cap of 5") {
		t.Fatalf("page cap: %d ops, err %v", len(got), err)
	}

	// Each request moves the clock by 3 s; the budget is 10 s.
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c = f.client(t, func(c *Config) {
		c.PageSize = 100
		c.DiscoveryBudget = 10 * time.Second
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
	})
	got, err = c.Discover(context.Background(), nil)
	te, ok = sources.IsTruncated(err)
	if !ok || !strings.Contains(te.Reason, "time budget of 10s") || len(got) == 0 || len(got) >= 2500 {
		t.Fatalf("budget: %d ops, err %v", len(got), err)
	}
}

// Each page goes through retry alone: a page that fails once is asked
// again by itself, and the pages before it are not re-read.
func TestDiscoverRetriesEachPageAlone(t *testing.T) {
	f := newFakeWS(t)
	var mu sync.Mutex
	failed := map[string]bool{}
	pagedHistory(t, f, 500, func(p int) string { return "tok-" + strconv.Itoa(p) })
	inner := f.handlers["GET /api/2.0/sql/history/queries"]
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.RawQuery
		mu.Lock()
		first := !failed[key]
		failed[key] = true
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "0")
			writeError(w, http.StatusTooManyRequests, "REQUEST_LIMIT_EXCEEDED", "slow down", "")
			return
		}
		inner(w, r)
	})
	c := f.client(t, func(c *Config) { c.PageSize = 100 })
	var calls []string
	retry := func(ctx context.Context, call string, fn func(context.Context) error) error {
		calls = append(calls, call)
		var err error
		for range 2 {
			if err = fn(ctx); err == nil {
				return nil
			}
		}
		return err
	}
	got, err := c.Discover(context.Background(), retry)
	if err != nil || len(got) != 500 {
		t.Fatalf("%d ops, %v", len(got), err)
	}
	// 5 live pages + 1 terminal, each failing once: 12 requests.
	if n := f.count("GET /api/2.0/sql/history/queries"); n != 12 {
		t.Fatalf("%d requests, want 12 (each page retried alone)", n)
	}
	want := []string{"ListQueries", "ListQueries", "ListQueries", "ListQueries", "ListQueries", "ListWarehouses", "ListQueries"}
	if strings.Join(calls, ",") != strings.Join(want, ",") {
		t.Fatalf("requests through retry: %v, want %v", calls, want)
	}
}

// A REST answer larger than the bound stops being read, with an error
// naming the call and the limit; announced or chunked.
func TestRESTBodyIsBounded(t *testing.T) {
	f := newFakeWS(t)
	big := `{"res":[{"query_id":"a","query_text":"` + strings.Repeat("x", 64<<10) + `"}]}`
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("filter_by.statuses") == "QUEUED" {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
		} else {
			w.(http.Flusher).Flush() // chunked: no Content-Length
		}
		_, _ = w.Write([]byte(big))
	})
	c := f.client(t, func(c *Config) { c.MaxBody = 16 << 10 })
	_, err := c.Discover(context.Background(), nil)
	if err == nil {
		t.Fatal("a 64 KiB answer passed a 16 KiB bound")
	}
	var bt *BodyTooLargeError
	if !errors.As(err, &bt) || bt.Limit != 16<<10 {
		t.Fatalf("want BodyTooLargeError, got %T %v", err, err)
	}
	mustContain(t, err.Error(), "ListQueries", "16384")

	// Chunked: the terminal listing, reached when the live one is fine.
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("filter_by.statuses") == "QUEUED" {
			writeJSON(w, map[string]any{"res": []any{map[string]any{"query_id": "live", "status": "RUNNING"}}})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte(big))
	})
	got, err := c.Discover(context.Background(), nil)
	if !errors.As(err, &bt) || bt.Size != -1 || len(got) != 1 {
		t.Fatalf("chunked: %d ops, %v", len(got), err)
	}
	mustContain(t, err.Error(), "ListQueries", "16384")
}

func TestEndpointListingRepeatedTokenStops(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/vector-search/endpoints", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"endpoints": []any{map[string]any{"name": "vs-" + r.URL.Query().Get("page_token")}},
			"next_page_token": "same"})
	})
	c := f.client(t)
	_, err := c.Endpoints(context.Background(), nil)
	te, ok := sources.IsTruncated(err)
	if !ok || te.Call != CallListEndpoints || !strings.Contains(err.Error(), "repeated next_page_token") {
		t.Fatalf("want a truncation naming ListEndpoints, got %v", err)
	}
	if n := f.count("GET /api/2.0/vector-search/endpoints"); n != 2 {
		t.Fatalf("%d requests, want 2 (it used to loop until the deadline)", n)
	}
}

// The config file is read only when it is a regular file of bounded size;
// the error lists at most a few profile names.
func TestConfigFileBounded(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, []byte(strings.Repeat("[p]\nhost = https://x\n", 20000)), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		zero: "is not a regular file (a character device)",
		fifo: "is not a regular file (a named pipe)",
		huge: "dbxtop reads at most 262144",
	} {
		start := time.Now()
		_, err := New(context.Background(), Config{Host: "http://127.0.0.1:1", Token: testToken, ConfigFile: path})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v", path, d)
		}
	}

	many := filepath.Join(dir, "many")
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "[p%03d]\nhost = https://x\n", i)
	}
	if err := os.WriteFile(many, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Config{Profile: "prod", ConfigFile: many})
	if err == nil || !strings.Contains(err.Error(), "profiles there: p000, p001, p002, p003, p004 and 195 more)") {
		t.Fatalf("profile list: %v", err)
	}
}

// A warehouse that is not RUNNING is never asked over Thrift: status and
// actions go to the Statement Execution API, and the status says why.
func TestGateKeepsThriftOffStoppedWarehouses(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/statements/s1", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"statement_id": "s1", "status": map[string]any{"state": "SUCCEEDED"}})
	})
	f.handle("POST /api/2.0/sql/statements/s1/cancel", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, map[string]any{}) })
	f.handle("DELETE /api/2.0/sql/statements/s1", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, map[string]any{}) })
	f.handle("GET /api/2.0/sql/warehouses", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"warehouses": []any{
			map[string]any{"id": "up", "state": "RUNNING"}, map[string]any{"id": "down", "state": "STOPPED"}}})
	})
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, map[string]any{}) })
	rest := f.client(t)
	primary := &scriptedStatus{}
	r := StatusWithFallback(primary, rest)
	ctx := context.Background()

	// Before any listing nothing is known: REST only.
	st, err := r.Status(ctx, sources.Ref{StatementID: "s1", WarehouseID: "up"})
	if err != nil || primary.calls != 0 || st.Source != model.StatusViaStatementAPI || !strings.Contains(st.Note, "not listed yet") {
		t.Fatalf("before listing: %+v %v (thrift calls %d)", st, err, primary.calls)
	}
	if _, err := rest.Discover(ctx, nil); err != nil {
		t.Fatal(err)
	}
	st, err = r.Status(ctx, sources.Ref{StatementID: "s1", WarehouseID: "down"})
	if err != nil || primary.calls != 0 || st.Note != "warehouse down is STOPPED; Thrift would start it" {
		t.Fatalf("stopped warehouse: %+v %v (thrift calls %d)", st, err, primary.calls)
	}
	if _, err := r.Status(ctx, sources.Ref{StatementID: "s1", WarehouseID: "up"}); err != nil || primary.calls != 1 {
		t.Fatalf("running warehouse: %v, thrift calls %d", err, primary.calls)
	}
	thriftActions := &countingActions{}
	a := GatedActions(thriftActions, rest)
	if err := a.Close(ctx, sources.Ref{StatementID: "s1", WarehouseID: "down"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Cancel(ctx, sources.Ref{StatementID: "s1", WarehouseID: "down"}); err != nil {
		t.Fatal(err)
	}
	if thriftActions.n != 0 || f.count("DELETE /api/2.0/sql/statements/s1") != 1 || f.count("POST /api/2.0/sql/statements/s1/cancel") != 1 {
		t.Fatalf("actions on a stopped warehouse: thrift %d", thriftActions.n)
	}
	if err := a.Close(ctx, sources.Ref{StatementID: "s1", WarehouseID: "up"}); err != nil || thriftActions.n != 1 {
		t.Fatalf("running warehouse close: %v thrift %d", err, thriftActions.n)
	}
}

type countingActions struct{ n int }

func (c *countingActions) Cancel(context.Context, sources.Ref) error { c.n++; return nil }
func (c *countingActions) Close(context.Context, sources.Ref) error  { c.n++; return nil }

func TestSettleReadsFinalStateFromHistory(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("filter_by.statement_ids")
		switch id {
		case "done":
			writeJSON(w, map[string]any{"res": []any{map[string]any{"query_id": "done", "status": "FAILED", "error_message": "boom"}}})
		default:
			writeJSON(w, map[string]any{"res": []any{}})
		}
	})
	c := f.client(t)
	st, err := c.Settle(context.Background(), nil, sources.Ref{StatementID: "done"})
	if err != nil || st.State != model.StateFailed || st.ErrorMessage != "boom" || st.Open == nil || *st.Open || st.Source != model.StatusViaHistory {
		t.Fatalf("settled %+v %v", st, err)
	}
	st, err = c.Settle(context.Background(), nil, sources.Ref{StatementID: "nothing"})
	if err != nil || st.State != model.StateUnknown || !strings.Contains(st.Note, "no row") {
		t.Fatalf("unknown: %+v %v", st, err)
	}
}
