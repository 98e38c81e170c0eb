package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go"
	"github.com/databricks/databricks-sdk-go/apierr"
	"github.com/databricks/databricks-sdk-go/config"
	dbsqlsvc "github.com/databricks/databricks-sdk-go/service/sql"
	"github.com/databricks/databricks-sdk-go/service/vectorsearch"
	"github.com/databricks/databricks-sql-go/driverctx"

	"github.com/dbxtop/dbxtop/sources/sim"
)

// workspaceClient is the stock SDK client: Host and Token, nothing else
// unless the test is about RetryTimeoutSeconds.
func workspaceClient(t testing.TB, s *sim.Server, retryTimeoutSeconds int) *databricks.WorkspaceClient {
	t.Helper()
	w, err := databricks.NewWorkspaceClient(&databricks.Config{
		Host:                s.URL(),
		Token:               s.Token(),
		RetryTimeoutSeconds: retryTimeoutSeconds,
	})
	if err != nil {
		t.Fatalf("databricks.NewWorkspaceClient: %v", err)
	}
	return w
}

// runningStatement is a SELECT sleep(S) held by databricks-sql-go.
type runningStatement struct {
	id   string
	done chan struct{} // closed when the driver returned
	err  error         // the driver's error, valid after done
	stop func()        // cancel and wait for the driver
}

// longStatement starts SELECT sleep(secs) through databricks-sql-go and
// returns once the server runs it.
func longStatement(t testing.TB, s *sim.Server, warehouse string, secs int) *runningStatement {
	t.Helper()
	db := openDSN(t, s, warehouse)
	ctx, cancel := context.WithCancel(context.Background())
	ids := make(chan string, 4)
	ctx = driverctx.NewContextWithQueryIdCallback(ctx, func(q string) {
		if q != "" {
			select {
			case ids <- q:
			default:
			}
		}
	})
	rs := &runningStatement{done: make(chan struct{})}
	go func() {
		defer close(rs.done)
		rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT sleep(%d)", secs))
		if err == nil {
			rows.Close()
		}
		rs.err = err
	}()
	var once sync.Once
	rs.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-rs.done:
			case <-time.After(20 * time.Second):
				t.Errorf("driver did not return within 20 s of cancel")
			}
		})
	}
	t.Cleanup(rs.stop)
	select {
	case rs.id = <-ids:
	case <-rs.done:
		t.Fatalf("SELECT sleep(%d) returned before reporting an id: %v", secs, rs.err)
	case <-time.After(20 * time.Second):
		t.Fatalf("SELECT sleep(%d): no statement id within 20 s", secs)
	}
	waitFor(t, s, 10*time.Second, "statement "+rs.id+" RUNNING", func(tr truth) bool {
		o, ok := tr.op(rs.id)
		return ok && o.State == "RUNNING"
	})
	return rs
}

// TestSDKQueryHistory: the stock SDK lists query history with status and
// warehouse filters, pages with page_token, newest first.
func TestSDKQueryHistory(t *testing.T) {
	t.Parallel()
	s := startSimOpts(t, sim.Options{Warehouses: 2})
	whs := s.WarehouseIDs()
	if len(whs) < 2 {
		t.Fatalf("want 2 warehouses, got %v", whs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// One finished statement on warehouse 0, one running on each.
	db := openDSN(t, s, whs[0])
	var finishedID string
	qctx := driverctx.NewContextWithQueryIdCallback(ctx, func(q string) {
		if q != "" {
			finishedID = q
		}
	})
	var one int64
	if err := db.QueryRowContext(qctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d, %v", one, err)
	}
	run0 := longStatement(t, s, whs[0], 60).id
	run1 := longStatement(t, s, whs[1], 60).id

	w := workspaceClient(t, s, 0)
	list := func(f *dbsqlsvc.QueryFilter) []dbsqlsvc.QueryInfo {
		t.Helper()
		resp, err := w.QueryHistory.List(ctx, dbsqlsvc.ListQueryHistoryRequest{FilterBy: f, MaxResults: 100})
		if err != nil {
			t.Fatalf("QueryHistory.List(%+v): %v", f, err)
		}
		noSecret(t, s, "query history", fmt.Sprintf("%+v", resp))
		return resp.Res
	}
	ids := func(qs []dbsqlsvc.QueryInfo) []string {
		var out []string
		for _, q := range qs {
			out = append(out, q.QueryId)
		}
		sort.Strings(out)
		return out
	}

	got := list(&dbsqlsvc.QueryFilter{Statuses: []dbsqlsvc.QueryStatus{dbsqlsvc.QueryStatusRunning}, WarehouseIds: []string{whs[0]}})
	if len(got) != 1 || got[0].QueryId != run0 {
		t.Errorf("RUNNING on %s: got %v, want [%s]", whs[0], ids(got), run0)
	} else {
		q := got[0]
		if q.WarehouseId != whs[0] || q.Status != dbsqlsvc.QueryStatusRunning || !strings.Contains(q.QueryText, "sleep(60)") || q.QueryStartTimeMs == 0 {
			t.Errorf("running query fields: %+v", q)
		}
	}
	got = list(&dbsqlsvc.QueryFilter{Statuses: []dbsqlsvc.QueryStatus{dbsqlsvc.QueryStatusRunning}})
	if want := []string{run0, run1}; fmt.Sprint(ids(got)) != fmt.Sprint(sorted(want)) {
		t.Errorf("RUNNING on all warehouses: got %v, want %v", ids(got), sorted(want))
	}
	got = list(&dbsqlsvc.QueryFilter{Statuses: []dbsqlsvc.QueryStatus{dbsqlsvc.QueryStatusFinished}, WarehouseIds: []string{whs[0]}})
	if len(got) != 1 || got[0].QueryId != finishedID {
		t.Errorf("FINISHED on %s: got %v, want [%s]", whs[0], ids(got), finishedID)
	} else if !got[0].IsFinal && got[0].QueryEndTimeMs == 0 {
		t.Errorf("finished query has neither is_final nor query_end_time_ms: %+v", got[0])
	}
	got = list(&dbsqlsvc.QueryFilter{WarehouseIds: []string{whs[1]}})
	if len(got) != 1 || got[0].QueryId != run1 {
		t.Errorf("warehouse %s: got %v, want [%s]", whs[1], ids(got), run1)
	}

	// Paging, one per page, newest first.
	var paged []dbsqlsvc.QueryInfo
	req := dbsqlsvc.ListQueryHistoryRequest{MaxResults: 1}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("more than 10 pages for 3 queries: page tokens loop")
		}
		resp, err := w.QueryHistory.List(ctx, req)
		if err != nil {
			t.Fatalf("QueryHistory.List page %d: %v", page, err)
		}
		paged = append(paged, resp.Res...)
		if !resp.HasNextPage || resp.NextPageToken == "" {
			break
		}
		req.PageToken = resp.NextPageToken
	}
	if len(paged) != 3 {
		t.Fatalf("paging one at a time: %d queries, want 3 (%v)", len(paged), ids(paged))
	}
	for i := 1; i < len(paged); i++ {
		if paged[i].QueryStartTimeMs > paged[i-1].QueryStartTimeMs {
			t.Errorf("not newest first: %d before %d", paged[i-1].QueryStartTimeMs, paged[i].QueryStartTimeMs)
		}
	}

	// Warehouses list through the SDK matches the simulator's.
	all, err := w.Warehouses.ListAll(ctx, dbsqlsvc.ListWarehousesRequest{})
	if err != nil {
		t.Fatalf("Warehouses.ListAll: %v", err)
	}
	var names []string
	for _, e := range all {
		names = append(names, e.Id)
	}
	if fmt.Sprint(sorted(names)) != fmt.Sprint(sorted(whs)) {
		t.Errorf("warehouses: SDK %v, simulator %v", sorted(names), sorted(whs))
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// TestSDKStatementGetCancel: a Thrift statement is visible through the
// statement execution API; cancelling it there cancels it for the Thrift
// client too, which then sees CANCELED.
func TestSDKStatementGetCancel(t *testing.T) {
	t.Parallel()
	// StatementAPIForThrift: the SDK reads and cancels a statement the driver ran over Thrift.
	s := startSimOpts(t, sim.Options{StatementAPIForThrift: true})
	rs := longStatement(t, s, firstWarehouse(t, s), 60)
	id := rs.id
	w := workspaceClient(t, s, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	st, err := w.StatementExecution.GetStatementByStatementId(ctx, id)
	if err != nil {
		t.Fatalf("GetStatement(%s): %v", id, err)
	}
	if st.StatementId != id || st.Status == nil || st.Status.State != dbsqlsvc.StatementStateRunning {
		t.Fatalf("GetStatement(%s) = %+v (status %+v), want RUNNING", id, st, st.Status)
	}
	if err := w.StatementExecution.CancelExecution(ctx, dbsqlsvc.CancelExecutionRequest{StatementId: id}); err != nil {
		t.Fatalf("CancelExecution(%s): %v", id, err)
	}
	st, err = w.StatementExecution.GetStatementByStatementId(ctx, id)
	if err != nil {
		t.Fatalf("GetStatement after cancel: %v", err)
	}
	if st.Status == nil || st.Status.State != dbsqlsvc.StatementStateCanceled {
		t.Errorf("GetStatement after cancel: status %+v, want CANCELED", st.Status)
	}
	tr := getTruth(t, s)
	if o, _ := tr.op(id); o.State != "CANCELED" {
		t.Errorf("truth after REST cancel: %+v, want CANCELED", o)
	}
	// The Thrift client, polling each second, sees the cancel and fails.
	select {
	case <-rs.done:
		if err := rs.err; err == nil {
			t.Error("the driver's QueryContext succeeded for a statement cancelled elsewhere")
		} else {
			t.Logf("driver saw: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("the driver did not notice the cancel within 15 s")
	}

	// An unknown id answers 404 RESOURCE_DOES_NOT_EXIST, a permanent error.
	_, err = w.StatementExecution.GetStatementByStatementId(ctx, "00000000-0000-4000-8000-000000000000")
	if !errors.Is(err, apierr.ErrResourceDoesNotExist) && !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("GetStatement(unknown) = %v, want RESOURCE_DOES_NOT_EXIST / NOT_FOUND", err)
	}
}

// TestSDKVectorSearch: endpoints list/get and indexes list/get decode into
// the stock types and agree with the ground truth.
func TestSDKVectorSearch(t *testing.T) {
	t.Parallel()
	s := startSim(t, "")
	w := workspaceClient(t, s, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := getTruth(t, s)
	if len(tr.Endpoints) == 0 {
		t.Fatal("truth lists no vector search endpoints")
	}
	eps, err := w.VectorSearchEndpoints.ListEndpointsAll(ctx, vectorsearch.ListEndpointsRequest{})
	if err != nil {
		t.Fatalf("ListEndpointsAll: %v", err)
	}
	if len(eps) != len(tr.Endpoints) {
		t.Errorf("SDK lists %d endpoints, truth %d", len(eps), len(tr.Endpoints))
	}
	for _, te := range tr.Endpoints {
		ep, err := w.VectorSearchEndpoints.GetEndpointByEndpointName(ctx, te.Name)
		if err != nil {
			t.Errorf("GetEndpoint(%s): %v", te.Name, err)
			continue
		}
		if ep.Name != te.Name || ep.EndpointType == "" || ep.EndpointStatus == nil || ep.EndpointStatus.State == "" {
			t.Errorf("GetEndpoint(%s) = %+v", te.Name, ep)
		}
		idx, err := w.VectorSearchIndexes.ListIndexesAll(ctx, vectorsearch.ListIndexesRequest{EndpointName: te.Name})
		if err != nil {
			t.Errorf("ListIndexes(%s): %v", te.Name, err)
			continue
		}
		if ep.NumIndexes != len(idx) {
			t.Errorf("endpoint %s: num_indexes %d, ListIndexes %d", te.Name, ep.NumIndexes, len(idx))
		}
		var rows int64
		for _, mi := range idx {
			if mi.EndpointName != te.Name {
				t.Errorf("index %s lists endpoint %q, want %q", mi.Name, mi.EndpointName, te.Name)
			}
			vi, err := w.VectorSearchIndexes.GetIndexByIndexName(ctx, mi.Name)
			if err != nil {
				t.Errorf("GetIndex(%s): %v", mi.Name, err)
				continue
			}
			if vi.Status == nil {
				t.Errorf("GetIndex(%s): no status", mi.Name)
				continue
			}
			rows += vi.Status.IndexedRowCount
		}
		if rows != te.Rows {
			t.Errorf("endpoint %s: indexes hold %d rows, truth says %d", te.Name, rows, te.Rows)
		}
	}
	_, err = w.VectorSearchEndpoints.GetEndpointByEndpointName(ctx, "no-such-endpoint")
	if !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("GetEndpoint(unknown) = %v, want a 404", err)
	}
}

// exhaustedIndex starts a simulator whose first endpoint answers
// RESOURCE_EXHAUSTED and returns the index to upsert into.
func exhaustedIndex(t testing.TB) (*sim.Server, string, string) {
	t.Helper()
	// vs-prod holds Direct Access indexes: upserts serve only those (the
	// simulator refuses writes to a Delta Sync index).
	ep := "vs-prod"
	s := startSim(t, "exhausted="+ep)
	w := workspaceClient(t, s, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	idx, err := w.VectorSearchIndexes.ListIndexesAll(ctx, vectorsearch.ListIndexesRequest{EndpointName: ep})
	if err != nil || len(idx) == 0 {
		t.Fatalf("ListIndexes(%s): %d indexes, %v", ep, len(idx), err)
	}
	return s, ep, idx[0].Name
}

// upsertResult is one measurement of the stock SDK on a full endpoint.
type upsertResult struct {
	requests int64
	elapsed  time.Duration
	err      error
}

func upsertFull(t testing.TB, s *sim.Server, index string, retryTimeoutSeconds int) upsertResult {
	t.Helper()
	w := workspaceClient(t, s, retryTimeoutSeconds)
	before := getStats(t, s).Requests["UpsertDataVectorIndex"]
	start := time.Now()
	_, err := w.VectorSearchIndexes.UpsertDataVectorIndex(context.Background(), vectorsearch.UpsertDataVectorIndexRequest{
		IndexName:  index,
		InputsJson: `[{"id": "conformance-1", "text_vector": [0.1, 0.2, 0.3]}]`,
	})
	r := upsertResult{elapsed: time.Since(start), err: err}
	r.requests = getStats(t, s).Requests["UpsertDataVectorIndex"] - before
	return r
}

// checkExhausted asserts what the stock SDK gives the caller: the typed
// cause survives (errors.Is ErrResourceExhausted), with status and code.
func checkExhausted(t testing.TB, s *sim.Server, r upsertResult) {
	t.Helper()
	if r.err == nil {
		t.Fatal("upsert into a full endpoint succeeded")
	}
	if !errors.Is(r.err, apierr.ErrResourceExhausted) {
		t.Fatalf("upsert error %v (%T) is not apierr.ErrResourceExhausted", r.err, r.err)
	}
	var ae *apierr.APIError
	if !errors.As(r.err, &ae) {
		t.Fatalf("upsert error %T has no *apierr.APIError", r.err)
	}
	if ae.StatusCode != 429 || ae.ErrorCode != "RESOURCE_EXHAUSTED" {
		t.Errorf("APIError status %d code %q, want 429 RESOURCE_EXHAUSTED", ae.StatusCode, ae.ErrorCode)
	}
	var reqID string
	if ri := ae.ErrorDetails().RequestInfo; ri != nil {
		reqID = ri.RequestID
	}
	if len(reqID) != 36 {
		t.Errorf("error details carry request_id %q, want a UUID", reqID)
	}
	noSecret(t, s, "SDK error text", r.err.Error())
}

// TestSDKUpsertExhausted: RetryTimeoutSeconds=1 is the smallest budget
// the stock SDK accepts; it makes exactly one attempt. The anchors with
// retries are in TestSDKUpsertExhaustedAnchor.
func TestSDKUpsertExhausted(t *testing.T) {
	t.Parallel()
	s, ep, index := exhaustedIndex(t)
	r := upsertFull(t, s, index, 1)
	t.Logf("endpoint %s index %s: %d requests, %s, error %q", ep, index, r.requests, r.elapsed.Round(time.Millisecond), r.err)
	checkExhausted(t, s, r)
	if r.requests != 1 {
		t.Errorf("RetryTimeoutSeconds=1: %d upsert requests, want 1", r.requests)
	}
	tr := getTruth(t, s)
	for _, e := range tr.Endpoints {
		if e.Name == ep && !e.Exhausted {
			t.Errorf("truth endpoint %s not marked exhausted: %+v", ep, e)
		}
	}
}

// The stock SDK's retry schedule (retries.Retrier.Run in
// databricks-sdk-go v0.182.0): after its k-th failed attempt it waits
// min(k, 10) s plus a jitter of 50–750 ms, until the request's retry
// budget (RetryTimeoutSeconds, 300 s by default: httpclient's
// defaultRetryTimeout) ends.
const (
	sdkMinJitter = 50 * time.Millisecond
	sdkMaxJitter = 750 * time.Millisecond
)

// sdkRequestsWithin is how many attempts the SDK's schedule fits in
// budget when every wait carries extra (a jitter, plus the time a request
// takes).
func sdkRequestsWithin(budget, extra time.Duration) int64 {
	n, at := int64(1), time.Duration(0)
	for k := 1; ; k++ {
		at += min(time.Duration(k)*time.Second, 10*time.Second) + extra
		if at >= budget {
			return n
		}
		n++
	}
}

// sdkRequestBounds is the fewest and the most attempts the SDK makes in
// budget: every jitter the largest plus slack per request (a loaded
// machine), or every jitter the smallest and requests instant.
func sdkRequestBounds(budget time.Duration) (lo, hi int64) {
	const slack = 250 * time.Millisecond
	return sdkRequestsWithin(budget, sdkMaxJitter+slack), sdkRequestsWithin(budget, sdkMinJitter)
}

// TestSDKRetryScheduleFitsTheAnchor: the README's anchor (the stock SDK
// retries a permanent RESOURCE_EXHAUSTED for five minutes, 34 requests)
// follows from the SDK's schedule; TestSDKUpsertExhaustedAnchor checks the
// SDK keeps that schedule against the simulator.
func TestSDKRetryScheduleFitsTheAnchor(t *testing.T) {
	lo, hi := sdkRequestsWithin(300*time.Second, sdkMaxJitter), sdkRequestsWithin(300*time.Second, sdkMinJitter)
	if lo > 34 || hi < 34 {
		t.Errorf("the SDK's schedule fits %d–%d requests in 300 s; README and docs/conformance.md say 34", lo, hi)
	}
	if lo, hi := sdkRequestBounds(20 * time.Second); lo < 2 || hi > 6 {
		t.Errorf("20 s budget: %d–%d requests; want a retry and no more than the schedule's 6", lo, hi)
	}
}

// TestSDKUpsertExhaustedAnchor is the anchor behind --fail-fast-exhausted:
// the stock SDK against one permanent 429 RESOURCE_EXHAUSTED retries until
// its budget is spent, on the schedule above. CI runs it with the SDK's
// own setting RetryTimeoutSeconds=20 (the schedule's first 6 requests);
// DBXTOP_LONG=1 adds the default budget (300 s, 33–35 requests).
func TestSDKUpsertExhaustedAnchor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		retry  int
		budget time.Duration
	}{{"retry-timeout-20s", 20, 20 * time.Second}}
	if longRuns() {
		cases = append(cases, struct {
			name   string
			retry  int
			budget time.Duration
		}{"default-300s", 0, 300 * time.Second})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, ep, index := exhaustedIndex(t)
			r := upsertFull(t, s, index, tc.retry)
			checkExhausted(t, s, r)
			t.Logf("ANCHOR stock databricks-sdk-go %s: endpoint %s: %d requests, %.2f s, error %q",
				tc.name, ep, r.requests, r.elapsed.Seconds(), r.err)
			if lo, hi := sdkRequestBounds(tc.budget); r.requests < lo || r.requests > hi {
				t.Errorf("%d upsert requests in a %s budget; the SDK's schedule fits %d–%d", r.requests, tc.budget, lo, hi)
			}
			// The SDK spends its whole budget on an error that retrying
			// cannot fix: the lie the README describes.
			if r.elapsed < tc.budget {
				t.Errorf("the SDK returned after %s, before its %s budget", r.elapsed, tc.budget)
			}
		})
	}
}

// TestSDKHostMetadata: v0.182.0 fetches /.well-known/databricks-config
// without credentials while resolving its configuration; a real workspace
// serves it publicly. The simulator must too, or every SDK client logs a
// host-metadata warning and skips the document.
func TestSDKHostMetadata(t *testing.T) {
	t.Parallel()
	s := startSim(t, "")
	resp, err := introspectClient.Get(s.URL() + "/.well-known/databricks-config")
	if err != nil {
		t.Fatalf("GET /.well-known/databricks-config: %v", err)
	}
	defer resp.Body.Close()
	var meta config.HostMetadata
	if resp.StatusCode != 200 {
		t.Fatalf("GET /.well-known/databricks-config without a token: HTTP %d, want 200", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		t.Fatalf("decode host metadata into config.HostMetadata: %v", err)
	}
	if meta.OIDCEndpoint == "" {
		t.Errorf("host metadata %+v lacks oidc_endpoint", meta)
	}
	before := getStats(t, s).Requests["HostMetadata"]
	w := workspaceClient(t, s, 0)
	if _, err := w.Warehouses.ListAll(context.Background(), dbsqlsvc.ListWarehousesRequest{}); err != nil {
		t.Fatalf("Warehouses.ListAll: %v", err)
	}
	if got := getStats(t, s).Requests["HostMetadata"] - before; got < 1 {
		t.Errorf("the SDK made %d host metadata requests; want ≥ 1 (is the route counted?)", got)
	}
	// The SDK normalises host_type from "workspace" / "account" /
	// "unified" (config.normalizeHostType); any other spelling decodes as
	// HostTypeUnknown.
	if meta.HostType != config.WorkspaceHost {
		t.Errorf("host_type decodes as %q, want %q", meta.HostType, config.WorkspaceHost)
	}
}
