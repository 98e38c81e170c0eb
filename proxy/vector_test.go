package proxy

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go"
	"github.com/databricks/databricks-sdk-go/apierr"
	"github.com/databricks/databricks-sdk-go/service/vectorsearch"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	dbx "github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
)

const (
	directIdx = "main.support.tickets_idx"    // vs-prod, Direct Access
	syncIdx   = "main.analytics.products_idx" // vs-analytics, Delta Sync
)

// restCall sends one index data request through the proxy as a client
// would (the simulator's token, a client User-Agent).
func restCall(t *testing.T, s *sim.Server, p *Server, method, path string, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, p.URL()+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ingest-job/1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func upsertBody(n int) string {
	var rows []string
	for i := range n {
		rows = append(rows, `{"id":"k`+string(rune('a'+i))+`","text":"t"}`)
	}
	b, _ := json.Marshal(map[string]string{"inputs_json": "[" + strings.Join(rows, ",") + "]"})
	return string(b)
}

func vectorDoc(t *testing.T, p *Server) sources.ProxyVectorDoc {
	t.Helper()
	var d sources.ProxyVectorDoc
	if code := adminGet(t, p, adminapi.PathVector, &d); code != http.StatusOK {
		t.Fatalf("admin %s: HTTP %d", adminapi.PathVector, code)
	}
	return d
}

func indexOf(d sources.ProxyVectorDoc, name string) sources.ProxyIndexWrites {
	for _, ix := range d.Indexes {
		if ix.Index == name {
			return ix
		}
	}
	return sources.ProxyIndexWrites{}
}

// Writes, deletes and error answers are counted from the answers; a
// capacity refusal is reported with the server's words and request id,
// and forwarded unchanged without --fail-fast-exhausted.
func TestVectorWritesObserved(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{})
	base := "/api/2.0/vector-search/indexes/"

	if resp, b := restCall(t, s, p, http.MethodPost, base+directIdx+"/upsert-data", upsertBody(3)); resp.StatusCode != 200 {
		t.Fatalf("upsert: HTTP %d %s", resp.StatusCode, b)
	}
	q := url.Values{"primary_keys": {"ka", "kb"}}
	if resp, b := restCall(t, s, p, http.MethodDelete, base+directIdx+"/delete-data?"+q.Encode(), ""); resp.StatusCode != 200 {
		t.Fatalf("delete: HTTP %d %s", resp.StatusCode, b)
	}
	// A Delta Sync index refuses writes (the simulator's own text).
	resp, b := restCall(t, s, p, http.MethodPost, base+syncIdx+"/upsert-data", upsertBody(1))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "Delta Sync") {
		t.Fatalf("upsert to Delta Sync: HTTP %d %s", resp.StatusCode, b)
	}

	d := vectorDoc(t, p)
	ix := indexOf(d, directIdx)
	if ix.Upserts != 1 || ix.Deletes != 1 || ix.RowsWritten != 3 || ix.RowsDeleted != 2 ||
		ix.WrittenPerMinute != 3 || ix.DeletedPerMinute != 2 || ix.LastWriteAt.IsZero() || ix.LastUpsertAt.IsZero() {
		t.Errorf("direct index account %+v", ix)
	}
	if sx := indexOf(d, syncIdx); sx.Errors["INVALID_PARAMETER_VALUE"] != 1 || sx.RowsWritten != 0 || sx.Refusals != 0 {
		t.Errorf("delta sync index account %+v", sx)
	}
	if d.RESTRequests != 3 || len(d.Refusals) != 0 {
		t.Errorf("doc %+v", d)
	}

	// The endpoint fills: the refusal is reported, the answer forwarded as is.
	f, _ := sim.ParseFaults("exhausted=vs-prod")
	s.SetFaults(f)
	resp, b = restCall(t, s, p, http.MethodPost, base+directIdx+"/upsert-data", upsertBody(2))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get(HeaderRewritten) != "" ||
		!bytes.Contains(b, []byte(`"error_code":"RESOURCE_EXHAUSTED"`)) {
		t.Fatalf("refusal without the flag: HTTP %d %q %s", resp.StatusCode, resp.Header.Get(HeaderRewritten), b)
	}
	rid := resp.Header.Get("x-request-id")
	d = vectorDoc(t, p)
	if len(d.Refusals) != 1 {
		t.Fatalf("refusals %+v", d.Refusals)
	}
	r := d.Refusals[0]
	if r.Index != directIdx || r.Message != sim.ExhaustedMessage || r.RequestID != rid || rid == "" ||
		r.Status != 429 || r.ErrorCode != "RESOURCE_EXHAUSTED" || r.Rewritten || r.At.IsZero() {
		t.Errorf("refusal %+v (request id %q)", r, rid)
	}
	if ix := indexOf(d, directIdx); ix.Refusals != 1 || ix.LastRefusal == nil || ix.Errors["RESOURCE_EXHAUSTED"] != 1 || ix.RowsWritten != 3 {
		t.Errorf("after the refusal %+v", ix)
	}
	// Nothing the proxy did is a write of its own.
	if w := s.Stats().ObserverWrites; len(w) != 0 {
		t.Errorf("observer writes %v", w)
	}
}

// A 429 RESOURCE_EXHAUSTED that is not about capacity (a workspace API
// quota) is forwarded unchanged with the flag and teaches nothing.
func TestRateLimitExhaustedForwardedUnchanged(t *testing.T) {
	s := startSim(t, "quota=1@UpsertDataVectorIndex")
	p := startProxy(t, s.URL(), Options{FailFastExhausted: true})
	resp, b := restCall(t, s, p, http.MethodPost, "/api/2.0/vector-search/indexes/"+directIdx+"/upsert-data", upsertBody(1))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get(HeaderRewritten) != "" ||
		!bytes.Contains(b, []byte(`"error_code":"RESOURCE_EXHAUSTED"`)) || !bytes.Contains(b, []byte("quota")) {
		t.Fatalf("HTTP %d %q %s", resp.StatusCode, resp.Header.Get(HeaderRewritten), b)
	}
	d := vectorDoc(t, p)
	if ix := indexOf(d, directIdx); len(d.Refusals) != 0 || ix.Refusals != 0 || ix.Errors["RESOURCE_EXHAUSTED"] != 1 {
		t.Errorf("doc %+v", d)
	}
}

func sdkClient(t testing.TB, host, token string, retry int) *databricks.WorkspaceClient {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	w, err := databricks.NewWorkspaceClient(&databricks.Config{Host: host, Token: token, HTTPTransport: tr, RetryTimeoutSeconds: retry})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The stock SDK through the proxy with --fail-fast-exhausted: one
// request, and the server's message is the client's error.
func TestFailFastExhaustedStockSDK(t *testing.T) {
	s := startSim(t, "exhausted=vs-prod")
	p := startProxy(t, s.URL(), Options{FailFastExhausted: true})
	// The SDK's default 5-minute retry window: a retry would show.
	w := sdkClient(t, p.URL(), s.Token(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := w.VectorSearchIndexes.UpsertDataVectorIndex(ctx, vectorsearch.UpsertDataVectorIndexRequest{
		IndexName: directIdx, InputsJson: `[{"id":"a","text":"t"}]`})
	if err == nil || err.Error() != sim.ExhaustedMessage {
		t.Fatalf("client error %v, want the server's message", err)
	}
	var ae *apierr.APIError
	if !errors.As(err, &ae) || ae.StatusCode != FailFastStatus || ae.ErrorCode != FailFastCode {
		t.Errorf("API error %+v", ae)
	}
	if n := s.Stats().Requests["UpsertDataVectorIndex"]; n != 1 {
		t.Errorf("the server saw %d upserts, want 1", n)
	}
	if d := vectorDoc(t, p); len(d.Refusals) != 1 || !d.Refusals[0].Rewritten || !d.FailFastExhausted {
		t.Errorf("doc %+v", d)
	}
	// The header says what was rewritten, from what.
	resp, b := restCall(t, s, p, http.MethodPost, "/api/2.0/vector-search/indexes/"+directIdx+"/upsert-data", upsertBody(1))
	h := resp.Header.Get(HeaderRewritten)
	if resp.StatusCode != FailFastStatus || !strings.HasPrefix(h, "429 RESOURCE_EXHAUSTED -> 400 QUOTA_EXCEEDED") ||
		!bytes.Contains(b, []byte(sim.ExhaustedMessage)) || !bytes.Contains(b, []byte(`"error_code":"QUOTA_EXCEEDED"`)) {
		t.Errorf("HTTP %d %q %s", resp.StatusCode, h, b)
	}
}

// Without the flag the SDK's behaviour is its own: it retries the 429
// RESOURCE_EXHAUSTED until its retry window ends.
func TestWithoutFailFastSDKUnchanged(t *testing.T) {
	t.Parallel() // waits out the SDK's retry window
	s := startSim(t, "exhausted=vs-prod")
	p := startProxy(t, s.URL(), Options{})
	// A 10 s retry window: long enough for dbxtop's round to run while
	// the client still retries, on a loaded machine too.
	w := sdkClient(t, p.URL(), s.Token(), 10)
	done := make(chan error, 1)
	go func() {
		_, err := w.VectorSearchIndexes.UpsertDataVectorIndex(context.Background(), vectorsearch.UpsertDataVectorIndexRequest{
			IndexName: directIdx, InputsJson: `[]`})
		done <- err
	}()
	// While the client still retries, dbxtop's next capacity round after
	// the first refusal flags the endpoint, with no write of its own.
	waitFor(t, "the first refusal", 10*time.Second, func() bool { return len(p.Vector().Refusals) > 0 })
	rest, err := databricksREST(s)
	if err != nil {
		t.Fatal(err)
	}
	defer rest.CloseIdleConnections()
	admin, err := adminapi.NewAdminClient(p.AdminURL(), p.AdminToken(), "dbxtop/test")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.CloseIdleConnections()
	eps, err := adminapi.MergeCapacity(admin, rest).Endpoints(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		if (ep.Name == "vs-prod") != ep.Exhausted || ep.Name == "vs-prod" && ep.ExhaustedVia != model.LearnedViaProxy {
			t.Errorf("%s: exhausted %v via %q", ep.Name, ep.Exhausted, ep.ExhaustedVia)
		}
	}
	select {
	case <-done:
		t.Fatal("the client stopped before dbxtop's round: the test proves nothing")
	default:
	}
	err = <-done
	if s.Stats().ObserverRequests["UpsertDataVectorIndex"] != 0 {
		t.Errorf("dbxtop wrote")
	}
	var ae *apierr.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.ErrorCode != "RESOURCE_EXHAUSTED" || err.Error() != sim.ExhaustedMessage {
		t.Fatalf("client error %v", err)
	}
	if n := s.Stats().Requests["UpsertDataVectorIndex"]; n < 2 {
		t.Errorf("the server saw %d upserts: the SDK's retries were changed", n)
	}
	if d := vectorDoc(t, p); len(d.Refusals) < 2 || d.Refusals[0].Rewritten {
		t.Errorf("refusals %+v", d.Refusals)
	}
}

func TestIsCapacityRefusal(t *testing.T) {
	cases := []struct {
		op     string
		status int
		code   string
		msg    string
		want   bool
	}{
		{"upsert", 429, "RESOURCE_EXHAUSTED", sim.ExhaustedMessage, true},
		{"upsert", 429, "RESOURCE_EXHAUSTED", "Workspace quota exceeded for this API; the request will not succeed until usage drops.", false},
		{"upsert", 429, "RESOURCE_EXHAUSTED", "Rate limit exceeded: endpoint capacity is fine, slow down", false},
		{"upsert", 429, "REQUEST_LIMIT_EXCEEDED", sim.ExhaustedMessage, false},
		{"upsert", 400, "RESOURCE_EXHAUSTED", sim.ExhaustedMessage, false},
		{"delete", 429, "RESOURCE_EXHAUSTED", sim.ExhaustedMessage, false},
	}
	for _, c := range cases {
		if got := IsCapacityRefusal(c.op, c.status, c.code, c.msg); got != c.want {
			t.Errorf("%+v: %v", c, got)
		}
	}
}

func TestRewriteErrorCode(t *testing.T) {
	in := `{ "message" : "a \"error_code\" b", "error_code" :  "RESOURCE_EXHAUSTED" ,"details":[{"x":1}]}`
	got, ok := rewriteErrorCode([]byte(in), "QUOTA_EXCEEDED")
	want := `{ "message" : "a \"error_code\" b", "error_code" :  "QUOTA_EXCEEDED" ,"details":[{"x":1}]}`
	if !ok || string(got) != want {
		t.Errorf("got %s %v", got, ok)
	}
	if got, ok := rewriteErrorCode([]byte(`{"error_code":"A","error_code":"B"}`), "Q"); !ok || string(got) != `{"error_code":"Q","error_code":"Q"}` {
		t.Errorf("duplicate keys: %s %v", got, ok)
	}
	for _, bad := range []string{``, `[]`, `{"error_code":7}`, `{"message":"x"}`, `{"error_code":`} {
		if _, ok := rewriteErrorCode([]byte(bad), "X"); ok {
			t.Errorf("%q rewritten", bad)
		}
	}
}

// FuzzRewriteErrorCode: the body of a server answer is remote input.
func FuzzRewriteErrorCode(f *testing.F) {
	f.Add([]byte(`{"error_code":"RESOURCE_EXHAUSTED","message":"m"}`))
	f.Add([]byte(`{"a":{"error_code":"x"},"error_code":"y"}`))
	f.Add([]byte(`{"error_code":"a","message":"m","error_code":"b"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := rewriteErrorCode(b, "QUOTA_EXCEEDED")
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			if json.Valid(b) {
				t.Fatalf("valid %q became invalid %q", b, out)
			}
			return
		}
		if json.Valid(b) && string(m["error_code"]) != `"QUOTA_EXCEEDED"` {
			t.Fatalf("%q -> %q", b, out)
		}
	})
}

func TestVectorDataPath(t *testing.T) {
	for _, c := range []struct{ m, p, ix, op string }{
		{"POST", "/api/2.0/vector-search/indexes/a.b.c/upsert-data", "a.b.c", "upsert"},
		{"DELETE", "/api/2.0/vector-search/indexes/a.b.c/delete-data", "a.b.c", "delete"},
		{"GET", "/api/2.0/vector-search/indexes/a.b.c/upsert-data", "", ""},
		{"POST", "/api/2.0/vector-search/indexes/a.b.c/query", "", ""},
		{"POST", "/api/2.0/vector-search/indexes//upsert-data", "", ""},
	} {
		ix, op, _ := vectorDataPath(c.m, c.p)
		if ix != c.ix || op != c.op {
			t.Errorf("%s %s: %q %q", c.m, c.p, ix, op)
		}
	}
}

// sim --scenario vector-incident with the embedded proxy: the writer's
// last writes go through the proxy, which reports the first refusal with
// the server's words; the bulk fill stayed in-process.
func TestIncidentWriterRefusedThroughProxy(t *testing.T) {
	t.Parallel() // waits out the scenario's timeline
	var p *Server
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioVectorIncident, Speed: 10, Seed: 7,
		Proxy: func(up string) (string, error) {
			p = startProxy(t, up, Options{})
			return p.URL(), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	waitFor(t, "the writer's refusal", time.Minute, func() bool {
		w := s.Stats().Writer
		return w != nil && w.BatchesRefused == 1
	})
	d := vectorDoc(t, p)
	if len(d.Refusals) != 1 || d.Refusals[0].Message != sim.ExhaustedMessage || d.Refusals[0].RequestID == "" ||
		!strings.HasPrefix(d.Refusals[0].Index, "reg.docs.") {
		t.Fatalf("refusals %+v", d.Refusals)
	}
	var written int64
	for _, ix := range d.Indexes {
		written += ix.RowsWritten
	}
	st := s.Stats()
	ups := st.Requests["UpsertDataVectorIndex"]
	// 30 s of timeline at 3,534 rows/s went over HTTP (about 106,000
	// rows); the other 318,000 stayed in-process.
	if written < 90_000 || written > 120_000 || ups < 10 || len(st.ObserverWrites) != 0 {
		t.Errorf("over HTTP: %d rows in %d upserts; observer writes %v", written, ups, st.ObserverWrites)
	}
	for _, e := range s.Truth().Endpoints {
		if e.Name == sim.IncidentEndpoint && (e.Rows != sim.IncidentRowLimit || !e.Exhausted) {
			t.Errorf("endpoint %+v", e)
		}
	}
}

func databricksREST(s *sim.Server) (*dbx.Client, error) {
	return dbx.New(context.Background(), dbx.Config{Host: s.URL(), Token: s.Token(), UserAgent: "dbxtop/test"})
}

// A gzip-encoded refusal is read for observation and, rewritten, reaches
// the client decoded; an answer over the read bound is forwarded whole
// and counted as undecoded.
func TestVectorAnswersEncodedOrLarge(t *testing.T) {
	big := `{"status":"SUCCESS","result":{"success_row_count":1,"failed_primary_keys":["` + strings.Repeat("k", maxVectorAnswer) + `"]}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "big") {
			_, _ = io.WriteString(w, big)
			return
		}
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = io.WriteString(zw, `{"error_code":"RESOURCE_EXHAUSTED","message":"`+sim.ExhaustedMessage+`","details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","request_id":"rid-gz"}]}`)
		_ = zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write(zb.Bytes())
	}))
	defer up.Close()
	p := startProxy(t, up.URL, Options{FailFastExhausted: true})
	do := func(path string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, p.URL()+path, strings.NewReader(`{}`))
		req.Header.Set("Accept-Encoding", "gzip") // as Go and Node clients send it
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := do("/api/2.0/vector-search/indexes/a.b.gz/upsert-data")
	if resp.StatusCode != FailFastStatus || resp.Header.Get("Content-Encoding") != "" ||
		!bytes.Contains(b, []byte(`"error_code":"QUOTA_EXCEEDED"`)) || !bytes.Contains(b, []byte("rid-gz")) {
		t.Fatalf("gzip refusal: HTTP %d %q %s", resp.StatusCode, resp.Header.Get("Content-Encoding"), b)
	}
	resp, b = do("/api/2.0/vector-search/indexes/a.b.big/upsert-data")
	if resp.StatusCode != 200 || string(b) != big {
		t.Fatalf("large answer: HTTP %d, %d bytes (want %d, unchanged)", resp.StatusCode, len(b), len(big))
	}
	d := vectorDoc(t, p)
	if d.Undecoded != 1 || len(d.Refusals) != 1 || d.Refusals[0].RequestID != "rid-gz" || indexOf(d, "a.b.big").Upserts != 1 {
		t.Errorf("doc %+v", d)
	}
}

// Only server-confirmed facts enter the index table: upserts refused for
// their made-up token, or naming an index the server does not know,
// record nothing, so they cannot push a real index out of it.
func TestRefusedUpsertsRecordNothing(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{})
	send := func(token, index string) int {
		req, _ := http.NewRequest(http.MethodPost, p.URL()+"/api/2.0/vector-search/indexes/"+index+"/upsert-data", strings.NewReader(upsertBody(1)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const n = 300
	for i := 0; i < n; i++ {
		if code := send("dapi-made-up-"+strconv.Itoa(i), "cat.schema.idx"+strconv.Itoa(i)); code != http.StatusUnauthorized {
			t.Fatalf("premise: a made-up token gets 401, got %d", code)
		}
		if i%10 == 0 {
			if code := send(s.Token(), "no.such.idx"+strconv.Itoa(i)); code != http.StatusNotFound {
				t.Fatalf("premise: an unknown index gets 404, got %d", code)
			}
		}
	}
	d := vectorDoc(t, p)
	if len(d.Indexes) != 0 || d.NotRecorded != n+n/10 {
		t.Fatalf("after %d refused upserts: %d indexes, not_recorded %d", n+n/10, len(d.Indexes), d.NotRecorded)
	}
	if code := send(s.Token(), directIdx); code != http.StatusOK {
		t.Fatalf("real upsert: %d", code)
	}
	if ix := indexOf(vectorDoc(t, p), directIdx); ix.Upserts != 1 || ix.RowsWritten != 1 {
		t.Errorf("the real upsert: %+v", ix)
	}
}
