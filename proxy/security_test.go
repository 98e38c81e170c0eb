package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// A request with two Authorization headers is refused with 400 and never
// reaches the server (which one would it read?).
func TestTwoAuthorizationHeadersRefused(t *testing.T) {
	s := startSim(t, "")
	p := startProxy(t, s.URL(), Options{})
	before := s.Stats().Requests["OpenSession"]
	req, _ := http.NewRequest(http.MethodPost, p.URL()+"/sql/1.0/warehouses/"+s.WarehouseIDs()[0], bytes.NewReader(emptyArgs("OpenSession")))
	req.Header.Set("Content-Type", "application/x-thrift")
	req.Header.Add("Authorization", "Bearer "+s.Token())
	req.Header.Add("Authorization", "Bearer dapi-someone-else")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "more than one Authorization") {
		t.Errorf("two Authorization headers: %d %s, want 400 saying why", resp.StatusCode, body)
	}
	if n := s.Stats().Requests["OpenSession"]; n != before {
		t.Errorf("the request reached the server (%d OpenSession, was %d)", n, before)
	}
}

// Every string of an error the proxy keeps for the admin API is cleaned:
// a new string field of model.ErrorInfo that cleanInfo misses fails here.
func TestCleanInfoCleansEveryString(t *testing.T) {
	hostile := "\x1b]0;pwned\x07\x1b[2J\u202eevil"
	var in model.ErrorInfo
	v := reflect.ValueOf(&in).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Kind() == reflect.String {
			v.Field(i).SetString(hostile)
		}
	}
	out := reflect.ValueOf(cleanInfo(&in)).Elem()
	for i := 0; i < out.NumField(); i++ {
		if out.Field(i).Kind() != reflect.String {
			continue
		}
		if got := out.Field(i).String(); strings.ContainsAny(got, "\x1b\x07\u202e") {
			t.Errorf("ErrorInfo.%s not cleaned: %q", out.Type().Field(i).Name, got)
		}
	}
}

// The upstream's error code for a client's failed close reaches the admin
// API cleaned; an id of any length is not repeated by a 404.
func TestAdminAnswersCleanAndBounded(t *testing.T) {
	s := startSim(t, "")
	simURL, _ := url.Parse(s.URL())
	rp := httputil.NewSingleHostReverseProxy(simURL)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if name, _ := thrift.PeekCallName(b); name == "CloseOperation" {
			// A Thrift error status whose SQL state (the error code the
			// admin API shows) carries escapes.
			ctx := context.Background()
			_, _, seq, _ := thrift.NewReadProtocol(b).ReadMessageBegin(ctx)
			buf := athrift.NewTMemoryBuffer()
			out := athrift.NewTBinaryProtocolConf(buf, nil)
			_ = out.WriteMessageBegin(ctx, name, athrift.REPLY, seq)
			sqlState, msg := "\x1b]0;pwned\x07\x1b[2JEVIL", "x\x1b[31m"
			res := &tc.TCLIServiceCloseOperationResult{Success: &tc.TCloseOperationResp{Status: &tc.TStatus{
				StatusCode: tc.TStatusCode_ERROR_STATUS, SqlState: &sqlState, ErrorMessage: &msg}}}
			_ = res.Write(ctx, out)
			_ = out.WriteMessageEnd(ctx)
			w.Header().Set("Content-Type", "application/x-thrift")
			_, _ = w.Write(buf.Bytes())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		rp.ServeHTTP(w, r)
	}))
	defer front.Close()
	p := startProxy(t, front.URL, Options{CloseDefer: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(t, p.URL(), s.Token(), "testapp/1.0")
	op := execute(ctx, t, c, s.WarehouseIDs()[0], "SELECT 1")
	if err := c.CloseOperation(ctx, op.Ref); err == nil {
		t.Fatal("the front's close failure did not happen")
	}
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	if len(doc.Operations) != 1 || doc.Operations[0].Close.ClientError == nil {
		t.Fatalf("facts: %+v", doc.Operations)
	}
	ce := doc.Operations[0].Close.ClientError
	if !strings.Contains(ce.ErrorCode, "EVIL") || strings.ContainsAny(ce.ErrorCode+ce.Message, "\x1b\x07") {
		t.Errorf("client error in the admin API not cleaned: %+v", ce)
	}
	if doc.Operations[0].Close.Outcome != sources.ProxyCloseFailed {
		t.Errorf("outcome %s", doc.Operations[0].Close.Outcome)
	}

	long := strings.Repeat("a", 10_000) + "\x1b[2J"
	for _, id := range []string{long, randomStatementID()} {
		req, _ := http.NewRequest(http.MethodPost, p.AdminURL()+adminapi.PathOperations+"/"+url.PathEscape(id)+"/close", nil)
		req.Header.Set("Authorization", "Bearer "+p.AdminToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || len(body) > 300 || bytes.Contains(body, []byte("aaaaaaaaa")) || bytes.Contains(body, []byte("\x1b")) {
			t.Errorf("close of an unknown id of %d bytes: %d, %d bytes: %.200s", len(id), resp.StatusCode, len(body), body)
		}
	}
}

// syncBuffer is a log sink tests read while the proxy writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A close-queue file open to others gets one warning; its thousands of
// entries get one line, not one each; an entry dated in the future counts
// from now and expires like the others.
func TestCloseQueueFileReadOnce(t *testing.T) {
	state := filepath.Join(t.TempDir(), "q.json")
	now := time.Now()
	doc := queueFile{Version: 1}
	for i := 0; i < 5000; i++ {
		doc.Closes = append(doc.Closes, persistedClose{StatementID: randomStatementID(), Secret: randomSecret(), QueuedAt: now.Add(-time.Minute)})
	}
	future := randomStatementID()
	doc.Closes = append(doc.Closes,
		persistedClose{StatementID: future, QueuedAt: now.Add(100 * 24 * time.Hour)},
		persistedClose{StatementID: randomStatementID(), QueuedAt: now.Add(-48 * time.Hour)},
		persistedClose{StatementID: "../../etc", QueuedAt: now})
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(state, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	p, err := New(Options{Upstream: "http://127.0.0.1:1", StateFile: state, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.resumeQueue(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if n := strings.Count(out, "\n"); n > 3 {
		t.Errorf("%d log lines for one file, want at most 3:\n%.600s", n, out)
	}
	if !strings.Contains(out, "open to other users") || !strings.Contains(out, "count=5001") {
		t.Errorf("log does not warn of the mode or count the entries:\n%s", out)
	}
	kept := p.st.keptCloses()
	if len(kept) != 5001 {
		t.Errorf("kept %d entries, want 5001 (the expired and the invalid dropped)", len(kept))
	}
	for _, e := range kept {
		if e.StatementID == future && e.QueuedAt.After(time.Now()) {
			t.Errorf("an entry dated in the future keeps its date %s: it would never expire", e.QueuedAt)
		}
	}
}
