package proxy

import (
	"bytes"
	"compress/gzip"
	"context"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// compressingHop stands between the proxy and the simulator as a
// compressing load balancer would: it gzips answers when the request
// accepts gzip, or labels them with encoding when set (an encoding
// nobody here decodes). It counts requests that asked for gzip.
func compressingHop(t *testing.T, upstream string, encoding *atomic.Value, askedGzip *atomic.Int64) string {
	t.Helper()
	u, _ := url.Parse(upstream)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{DisableCompression: true}
	rp.ModifyResponse = func(resp *http.Response) error {
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		enc, _ := encoding.Load().(string)
		switch {
		case enc != "":
			resp.Header.Set("Content-Encoding", enc)
		case resp.Request.Header.Get("Accept-Encoding") == "gzip":
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			_, _ = zw.Write(b)
			_ = zw.Close()
			b = z.Bytes()
			resp.Header.Set("Content-Encoding", "gzip")
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Del("Content-Length")
		return nil
	}
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") == "gzip" {
			askedGzip.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	return h.URL
}

// Behind a compressing hop the proxy still sees every answer (it
// decompresses a bounded copy) and forwards each body as it came; it asks
// the upstream for gzip only when the client did.
func TestCompressedAnswersObserved(t *testing.T) {
	s := startSim(t, "")
	var asked atomic.Int64
	var enc atomic.Value
	hop := compressingHop(t, s.URL(), &enc, &asked)
	p := startProxy(t, hop, Options{Heal: true, Policy: fastPolicy()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wh := s.WarehouseIDs()[0]

	// Go's transport asks for gzip and decompresses: the client gets rows.
	c := client(t, p.URL(), s.Token(), "gzipapp/1.0")
	n, id, err := runStatement(ctx, c, wh, "SELECT id FROM range(2500)")
	if err != nil || n != 2500 {
		t.Fatalf("through a compressing hop: %d rows, %v", n, err)
	}
	if asked.Load() == 0 {
		t.Fatal("the client's Accept-Encoding: gzip did not reach the hop")
	}
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	if len(doc.Operations) != 1 || doc.Operations[0].StatementID != id || doc.Operations[0].Close.Outcome != sources.ProxyClosed {
		t.Fatalf("facts %+v: want the compressed answers observed", doc.Operations)
	}

	// A client that asks for no compression: the upstream is not asked.
	before := asked.Load()
	plain, err := thrift.NewClient(thrift.Options{Host: p.URL(), Token: s.Token(), UserAgent: "plain/1.0",
		Transport: &http.Transport{DisableCompression: true}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.CloseIdleConnections()
	if n, _, err := runStatement(ctx, plain, wh, "SELECT 1"); err != nil || n != 1 {
		t.Fatalf("plain client: %d rows, %v", n, err)
	}
	if d := asked.Load() - before; d != 0 {
		t.Errorf("the proxy asked the upstream for gzip %d times for a client that did not", d)
	}
	if st := p.Stats(); st.Undecodable != 0 || st.Unobserved != 0 {
		t.Errorf("stats %+v", st)
	}
}

// An answer in an encoding the proxy cannot decode marks its operation
// unobserved with the reason: not held open forever.
func TestUndecodableEncodingMarksUnobserved(t *testing.T) {
	s := startSim(t, "")
	var asked atomic.Int64
	wh := s.WarehouseIDs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The statement starts through a plain hop, then its status answers
	// come back labelled with an encoding nobody here reads.
	direct := client(t, s.URL(), s.Token(), "app/1.0")
	sess, err := direct.OpenSession(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	op, err := direct.Execute(ctx, sess, "SELECT sleep(600)", false)
	if err != nil {
		t.Fatal(err)
	}
	var enc atomic.Value
	hop := compressingHop(t, s.URL(), &enc, &asked)
	p := startProxy(t, hop, Options{Heal: true, Policy: fastPolicy()})
	via := client(t, p.URL(), s.Token(), "app/1.0")
	if _, err := via.GetOperationStatus(ctx, op.Ref); err != nil {
		t.Fatal(err)
	}
	enc.Store("br")
	// The hop only labels the body: the client, which ignores the label,
	// still reads it, which shows the body went through as it came.
	if _, err := via.GetOperationStatus(ctx, op.Ref); err != nil {
		t.Errorf("client: %v; want the body as it came", err)
	}
	var doc adminapi.OperationsDoc
	adminGet(t, p, adminapi.PathOperations, &doc)
	if len(doc.Operations) != 1 || doc.Operations[0].Close.Outcome != sources.ProxyUnobserved || doc.Operations[0].Unobserved == "" {
		t.Fatalf("facts %+v: want the operation unobserved with a reason", doc.Operations)
	}
}
