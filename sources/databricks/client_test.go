package databricks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/databricks/databricks-sdk-go/service/sql"
	"github.com/databricks/databricks-sdk-go/service/vectorsearch"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

func TestUnknownProfileNamesProfileAndFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "databrickscfg")
	if err := os.WriteFile(path, []byte("[prod]\nhost = https://example.cloud.databricks.com\ntoken = dapi-file-token\n\n[staging]\nhost = https://s.example.com\ntoken = x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Config{Profile: "nope", ConfigFile: path})
	if err == nil {
		t.Fatal("want an error")
	}
	mustContain(t, err.Error(), `"nope"`, path, "prod, staging")
	mustNotContain(t, err.Error(), "dapi-file-token")

	_, err = New(context.Background(), Config{Profile: "prod", ConfigFile: filepath.Join(dir, "missing")})
	if err == nil {
		t.Fatal("want an error for a missing file")
	}
	mustContain(t, err.Error(), `"prod"`, filepath.Join(dir, "missing"), "does not exist")
}

func TestProfileFromFileReachesTheWorkspace(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/warehouses", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"warehouses": []map[string]any{{"id": "wh1"}}})
	})
	path := filepath.Join(t.TempDir(), "cfg")
	cfg := "[sim]\nhost = " + f.srv.URL + "\ntoken = " + testToken + "\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABRICKS_CONFIG_PROFILE", "sim")
	c, err := New(context.Background(), Config{ConfigFile: path, UserAgent: "dbxtop/test"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer c.CloseIdleConnections()
	if c.Host() != f.srv.URL {
		t.Errorf("Host() = %q, want %q", c.Host(), f.srv.URL)
	}
	ws, err := c.Warehouses(context.Background(), nil)
	if err != nil || len(ws) != 1 {
		t.Fatalf("Warehouses: %v %v", ws, err)
	}
	// Only the listing reached the server: no host-metadata discovery on
	// plain-http hosts.
	if f.total() != 1 {
		t.Errorf("%d requests, want 1", f.total())
	}
}

func TestAuthenticateAddsBearer(t *testing.T) {
	f := newFakeWS(t)
	c := f.client(t)
	r, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/sql/1.0/warehouses/wh1", nil)
	if err := c.Authenticate(r); err != nil {
		t.Fatal(err)
	}
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
	}
	if f.total() != 0 {
		t.Errorf("Authenticate made %d requests", f.total())
	}
}

func TestRedact(t *testing.T) {
	got := sources.RedactToken(`refused "Authorization: Bearer abc.def" and tok-12345 again tok-12345`, "tok-12345")
	mustNotContain(t, got, "abc.def", "tok-12345")
	mustContain(t, got, "<redacted>")
}

func TestUnmagicBreaksSDKRetryPhrases(t *testing.T) {
	for _, p := range []string{"connection reset by peer", "TLS handshake timeout", "connection refused", "Unexpected error", "i/o timeout"} {
		if strings.Contains(unmagic("read tcp: "+p), p) {
			t.Errorf("%q survives", p)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"1", "0", "-1", "86401", "99999999999999999999", "Sun, 29 Nov 2026 12:00:05 GMT", "Sunday, 29-Nov-26 12:00:05 GMT", "garbage", " 7 ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := sources.ParseRetryAfter(s, now)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("%q → %v", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("%q: not ok but %v", s, d)
		}
	})
}

func FuzzRowLimitTag(f *testing.F) {
	for _, s := range []string{"1000", "1_000", "320,000,000", "-5", "0", "x", "", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, ok := rowLimitTag([]vectorsearch.CustomTag{{Key: "dbxtop_row_limit", Value: v}})
		if ok && n <= 0 {
			t.Fatalf("%q → %d accepted", v, n)
		}
	})
}

// FuzzQueryInfo feeds arbitrary query-history JSON through the SDK's decoder
// and dbxtop's mapping: no panic, and every mapped row has an id.
func FuzzQueryInfo(f *testing.F) {
	f.Add([]byte(`{"res":[{"query_id":"01ef","status":"RUNNING","query_start_time_ms":1700000000000}]}`))
	f.Add([]byte(`{"res":[{"query_id":"x","status":"weird","query_end_time_ms":-1,"endpoint_id":"wh"}],"has_next_page":true}`))
	f.Add([]byte(`{"res":[{"status":"FAILED"}]}`))
	f.Add([]byte(`{"res":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var resp sql.ListQueriesResponse
		if err := resp.UnmarshalJSON(b); err != nil {
			return
		}
		for _, q := range resp.Res {
			d, ok := discoveredFrom(q)
			if ok && (d.Ref.StatementID == "" || d.Op.StatementID != d.Ref.StatementID) {
				t.Fatalf("bad mapping %+v", d)
			}
		}
	})
}

// FuzzDecodeHistoryPage: the fast decoder of query-history pages agrees
// with encoding/json wherever encoding/json accepts valid UTF-8 input, and
// nothing panics.
func FuzzDecodeHistoryPage(f *testing.F) {
	f.Add([]byte(`{"res":[{"query_id":"01ef","status":"RUNNING","query_start_time_ms":1700000000000,"query_text":"SELECT 1"}],"has_next_page":true,"next_page_token":"t"}`))
	f.Add([]byte(`{"res":[{"query_id":"x","status":"FAILED","query_end_time_ms":"1700000000001","error_message":"Query has been timed out due to inactivity.\u001b]0;x\u0007"}]}`))
	f.Add([]byte(`{"res":[{"QUERY_ID":"upper","Status":"FINISHED","query_start_time_ms":null}]}`))
	f.Add([]byte(`{"res":null,"has_next_page":false}`))
	f.Add([]byte(`{"res":[{"query_id":"a","query_id":"b","user_name":"\ud800"}]}`))
	f.Add([]byte(`{"res":[{"query_text":"\ud800\u0041 \udc00\ud800 \ud800\n \ud83d\ude00\u003e\u00E9 é","status":"\ud800"}]}`))
	f.Add([]byte(`{"res":[{"query_start_time_ms":1e3}]}`))
	// The fast decoder's edges: escapes it undoes and those it leaves to
	// encoding/json, skipped values, what it gives up on.
	f.Add([]byte(`{"res":[{"query_id":"q","query_text":"SELECT \"a\"\n\tFROM t\\x \/","metrics":{"a":[1,-2.5e+3,true,false,null,{"b":"c"}]},"is_final":false}]}`))
	f.Add([]byte(`{"res":[{"query_id":"q","user_name":"\u00e9l\u00e8ve","error_message":"\ud83d\ude00 \udc00"}],"res":[{}]}`))
	f.Add([]byte(`{"Res":[{"Query_Id":"q"}],"HAS_NEXT_PAGE":true,"n\u0065xt_page_token":"t"}`))
	f.Add([]byte(`{"res":[null,{"query_id":null,"status":"RUNNING","query_end_time_ms":"17"},{"query_id":"\u0000"}],"next_page_token":null,"has_next_page":null}`))
	f.Add([]byte(`{"res":[{"query_id":"a\x"}]}`))
	f.Add([]byte(`{"res":[{"query_id":"é\n\xff"}], "x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`))
	f.Add([]byte(` {"res":[{"query_start_time_ms":-0,"query_end_time_ms":01}]} `))
	f.Add([]byte(`{"res":[{"query_id":"ab","query_text":"SELECT \u003e 1","user_name":"u"},{"query_text":"t","query_id":"abc","user_name":"v","status":"RUNNING"},{"query_id":"ab","query_id":"ab"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := decodeHistoryPage(b)
		var want historyPage
		werr := json.Unmarshal(b, &want)
		if (gerr == nil) != (werr == nil) && werr == nil {
			t.Fatalf("refused what encoding/json accepts: %v", gerr)
		}
		if gerr == nil && werr != nil {
			t.Fatalf("accepted what encoding/json refuses (%v)", werr)
		}
		if werr != nil || !utf8.Valid(b) {
			return
		}
		// Nil against empty rows is not what a page says.
		norm := func(p historyPage) historyPage {
			if len(p.Res) == 0 {
				p.Res = nil
			}
			return p
		}
		if !reflect.DeepEqual(norm(*got), norm(want)) {
			t.Fatalf("decoders disagree on %q\n got %+v\nwant %+v", b, *got, want)
		}
	})
}

// TestFastDecoderReadsTypicalAnswers: answers as the API and the
// simulator send them (unknown fields, nested metrics, escaped SQL, nulls)
// take the fast path; those outside its subset do not, and are left to
// encoding/json.
func TestFastDecoderReadsTypicalAnswers(t *testing.T) {
	fast := []string{
		`{"res":[{"query_id":"01ef","status":"RUNNING","query_text":"SELECT 1\nFROM \"t\" WHERE a \u003e 1 -- \ud83d\ude00","user_name":"a@b.c","warehouse_id":"w","endpoint_id":"w",` +
			`"query_start_time_ms":1700000000000,"execution_end_time_ms":"1700000000001","query_end_time_ms":null,"is_final":false,` +
			`"metrics":{"total_time_ms":12,"rows_produced_count":0,"pruned":[1.5e3,-2]},"channel_used":{"name":"CHANNEL_NAME_CURRENT"},"session_id":"s"}],` +
			`"has_next_page":true,"next_page_token":"tok"}`,
		`{"res":[],"has_next_page":false}`,
		`{"res":null}`,
		`{}`,
	}
	for _, s := range fast {
		var p historyPage
		if !decodePageFast([]byte(s), &p) {
			t.Errorf("left to encoding/json: %s", s)
		}
	}
	slow := []string{
		`{"RES":[]}`, `{"res":[{"Query_ID":"q"}]}`, `{"res":[{"query_\u0069d":"q"}]}`, `{"res":[],"res":[]}`,
		`{"res":[{"query_id":1}]}`, `{"res":[{"query_start_time_ms":1.5}]}`, `{"res":[]} x`, `{"res":[{"a":"\x"}]}`, `null`,
	}
	for _, s := range slow {
		var p historyPage
		if decodePageFast([]byte(s), &p) {
			t.Errorf("the fast decoder read what it must leave to encoding/json: %s", s)
		}
	}
}

// TestDecodedPageOwnsItsStrings: the decoder reads the answer in place,
// and the buffer is reused for the next page, so nothing a decoded page
// holds may point into it: every string field of every row (found by
// reflection, so a field added later is checked too) and the page token
// survive the buffer being overwritten.
func TestDecodedPageOwnsItsStrings(t *testing.T) {
	page := []byte(`{"res":[{"query_id":"01ef-a","status":"RUNNING","query_text":"SELECT 1","user_name":"alice@example.com",` +
		`"executed_as_user_name":"bob@example.com","warehouse_id":"wh","endpoint_id":"wh","client_application":"Databricks JDBC Driver",` +
		`"query_start_time_ms":1700000000000,"error_message":"boom"},` +
		`{"query_id":"01ef-b","status":"FAILED","query_text":"SELECT \"x\"\nFROM t","user_name":"alice@example.com","error_message":"Query has been timed out due to inactivity."}],` +
		`"has_next_page":true,"next_page_token":"tok-123"}`)
	var want historyPage
	if err := json.Unmarshal(page, &want); err != nil {
		t.Fatal(err)
	}
	buf := slices.Clone(page)
	got, err := decodeHistoryPage(buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 'X' // the next answer read into the pooled buffer
	}
	if got.NextPageToken != want.NextPageToken {
		t.Errorf("page token %q after the buffer was reused, want %q", got.NextPageToken, want.NextPageToken)
	}
	if len(got.Res) != len(want.Res) {
		t.Fatalf("%d rows, want %d", len(got.Res), len(want.Res))
	}
	for r := range got.Res {
		g, w := reflect.ValueOf(got.Res[r]), reflect.ValueOf(want.Res[r])
		for f := range g.NumField() {
			if g.Field(f).Kind() == reflect.String && g.Field(f).String() != w.Field(f).String() {
				t.Errorf("row %d %s is %q after the buffer was reused, want %q", r, g.Type().Field(f).Name, g.Field(f).String(), w.Field(f).String())
			}
		}
	}
}

// A decoded page's strings have memory of their own: keeping one
// statement id and SQL text from each of 40 pages of ~0.5 MB keeps
// kilobytes alive, not the pages (the decoder's strings point into the
// answer until detached).
func TestDecodedPageDoesNotKeepTheAnswerAlive(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"res":[`)
	for i := range 999 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"query_id":"01ef%08d-0000-4000-8000-000000000000","status":"RUNNING","query_text":"SELECT * FROM t%d WHERE x > now() - INTERVAL 1 DAY","user_name":"alice@example.com","warehouse_id":"abc","query_start_time_ms":1700000000000,"session_id":"f835e442-b3a1-4d1b-a162-9e37e68d0b2e","statement_type":"SELECT"}`, i, i)
	}
	b.WriteString(`]}`)
	page := []byte(b.String())
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	if _, err := decodeHistoryPage(page); err != nil { // the decoder's own caches, once
		t.Fatal(err)
	}
	before := heap()
	var kept []string
	for range 40 {
		p, err := decodeHistoryPage(page)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, p.Res[7].QueryID, p.Res[8].QueryText)
	}
	grew := int64(heap()) - int64(before)
	runtime.KeepAlive(kept)
	if limit := int64(len(page)) * 4; grew > limit { // 40 retained pages would be ~20 MB
		t.Errorf("keeping 80 strings of 40 decoded pages kept %d bytes alive (a page is %d)", grew, len(page))
	}
}

// A query-history page is asked for with exactly the query string, path
// and credentials the SDK's client would send for the same request
// (historyList makes the request itself, to read the answer without the
// SDK's in-memory copy).
func TestHistoryRequestIsTheSDKs(t *testing.T) {
	f := newFakeWS(t)
	var got []*http.Request
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r)
		writeJSON(w, map[string]any{"res": []map[string]any{}})
	})
	c := f.client(t)
	req := sql.ListQueryHistoryRequest{
		FilterBy: &sql.QueryFilter{
			Statuses:            []sql.QueryStatus{sql.QueryStatusQueued, sql.QueryStatusRunning},
			WarehouseIds:        []string{"wh1", "wh 2"},
			StatementIds:        []string{"01ef-a", "01ef-b"},
			QueryStartTimeRange: &sql.TimeRange{StartTimeMs: 1700000000000, EndTimeMs: 1700000009999},
		},
		MaxResults: 999,
		PageToken:  "p+2/=",
	}
	var rc io.ReadCloser
	if err := c.dc.Do(context.Background(), http.MethodGet, "/api/2.0/sql/history/queries",
		map[string]string{"Accept": "application/json"}, map[string]any{}, req, &rc); err != nil {
		t.Fatalf("the SDK's request: %v", err)
	}
	rc.Close()
	if _, err := c.historyList(context.Background(), req); err != nil {
		t.Fatalf("historyList: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	sdk, ours := got[0], got[1]
	if sdk.URL.RawQuery != ours.URL.RawQuery || sdk.URL.Path != ours.URL.Path {
		t.Errorf("query string\n sdk  %s %s\n ours %s %s", sdk.URL.Path, sdk.URL.RawQuery, ours.URL.Path, ours.URL.RawQuery)
	}
	for _, h := range []string{"Authorization", "Accept"} {
		if sdk.Header.Get(h) != ours.Header.Get(h) {
			t.Errorf("%s: sdk %q, ours %q", h, sdk.Header.Get(h), ours.Header.Get(h))
		}
	}
	if ua := ours.Header.Get("User-Agent"); !strings.HasPrefix(ua, "dbxtop/test ") || !strings.Contains(ua, "databricks-sdk-go/") {
		t.Errorf("User-Agent %q: want dbxtop/ first, then the SDK's", ua)
	}
}

// Query-history pages keep the SDK client's rate limit (DATABRICKS_RATE_LIMIT,
// default 15 a second) though they are not sent through its client.
func TestHistoryPagesKeepTheSDKRateLimit(t *testing.T) {
	f := newFakeWS(t)
	if got := f.client(t).pageRate.Limit(); got != 15 {
		t.Errorf("default rate %v, want the SDK's 15/s", got)
	}
	t.Setenv("DATABRICKS_RATE_LIMIT", "2")
	if got := f.client(t).pageRate.Limit(); got != 2 {
		t.Errorf("DATABRICKS_RATE_LIMIT=2: rate %v, want 2/s", got)
	}
}

// The live listing's rows are whole: each with its state, start, text,
// user, warehouse and application, whether the engine follows it or not.
func TestLiveListingRowsAreWhole(t *testing.T) {
	f := newFakeWS(t)
	f.handle("GET /api/2.0/sql/history/queries", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"res": []map[string]any{
			{"query_id": "01ef-known", "status": "RUNNING", "query_text": "SELECT 1", "user_name": "alice@example.com",
				"warehouse_id": "wh", "client_application": "dbt", "query_start_time_ms": 1700000000000},
			{"query_id": "01ef-new", "status": "QUEUED", "query_text": "SELECT 2", "user_name": "bob@example.com",
				"warehouse_id": "wh", "client_application": "Tableau", "query_start_time_ms": 1700000001000},
		}})
	})
	rows, next, err := f.client(t).ListLive(context.Background(), "", nil)
	if err != nil || next != "" || len(rows) != 2 {
		t.Fatalf("ListLive: %d rows, next %q, %v", len(rows), next, err)
	}
	first, second := rows[0], rows[1]
	if first.Op.StatementID != "01ef-known" || first.Op.State != model.StateRunning || !first.Op.StartedAt.Equal(time.UnixMilli(1700000000000)) ||
		first.Op.SQL != "SELECT 1" || first.Op.User != "alice@example.com" || first.Op.ClientApplication != "dbt" || first.Ref.WarehouseID != "wh" {
		t.Errorf("first row: %+v %+v", first.Op, first.Ref)
	}
	if second.Op.StatementID != "01ef-new" || second.Op.State != model.StatePending || second.Op.SQL != "SELECT 2" ||
		second.Op.User != "bob@example.com" || second.Op.ClientApplication != "Tableau" || second.Ref.WarehouseID != "wh" {
		t.Errorf("second row: %+v %+v", second.Op, second.Ref)
	}
}
