package conformance

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// gzipHop is a compressing hop between the proxy and the simulator (a
// load balancer that compresses): it gzips every answer to a request that
// accepts gzip, and counts them.
func gzipHop(t *testing.T, upstream string, gzipped *atomic.Int64) string {
	t.Helper()
	u, _ := url.Parse(upstream)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}
	rp.ModifyResponse = func(resp *http.Response) error {
		if !strings.Contains(resp.Request.Header.Get("Accept-Encoding"), "gzip") {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(b)
		_ = zw.Close()
		resp.Body = io.NopCloser(&z)
		resp.ContentLength = int64(z.Len())
		resp.Header.Del("Content-Length")
		resp.Header.Set("Content-Encoding", "gzip")
		gzipped.Add(1)
		return nil
	}
	h := httptest.NewServer(rp)
	t.Cleanup(h.Close)
	return h.URL
}

// The Go driver, unchanged, through the proxy with resets on status and
// close, stale pooled connections, and a compressing hop between proxy
// and simulator: every statement returns its rows or a clear error,
// nothing stays open on the server once the close queue has run, and
// the proxy read every answer.
func TestProxyDriverThroughFaultsAndGzip(t *testing.T) {
	s := startSim(t, "")
	var gzipped atomic.Int64
	hop := gzipHop(t, s.URL(), &gzipped)
	log := &proxyLog{}
	p, err := proxy.Start(context.Background(), proxy.Options{Upstream: hop, Heal: true, UserAgent: "dbxtop-proxy/conformance",
		Logger: log.logger(), CloseDefer: 2 * time.Second}, proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	db := openViaProxy(t, s, p)
	setFaults(t, s, "reset=0.3@GetOperationStatus,reset=0.3@CloseOperation,stale=0.3")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n = 12
	ok, failed := 0, 0
	for i := 0; i < n; i++ {
		// A second of running: the driver polls its status (first after 1 s).
		rows, err := db.QueryContext(ctx, "SELECT sleep(1)")
		if err != nil {
			failed++
			t.Logf("statement %d: %v", i, err)
			continue
		}
		got := 0
		for rows.Next() {
			got++
		}
		if err := rows.Err(); err != nil || got != 1 {
			failed++
			t.Logf("statement %d: %d rows, %v", i, got, err)
		} else {
			ok++
		}
		_ = rows.Close()
	}
	_ = db.Close()
	if s.Stats().Faults["reset"] == 0 || gzipped.Load() == 0 {
		t.Fatalf("no reset injected (%v) or nothing compressed (%d): the test proves nothing", s.Stats().Faults, gzipped.Load())
	}
	setFaults(t, s, "")
	waitFor(t, s, 90*time.Second, "nothing open on the server", func(tr truth) bool {
		for _, o := range tr.Operations {
			if o.Open {
				return false
			}
		}
		return true
	})
	st := p.Stats()
	if st.Undecodable != 0 || st.Unobserved != 0 {
		t.Errorf("the proxy could not read %d answers (%d unobserved)", st.Undecodable, st.Unobserved)
	}
	t.Logf("PROXY faults+gzip: %d of %d statements ok, %d failed with an error; %d answers gzipped; heals %d, closes queued %d, closed by the proxy %d; faults %v",
		ok, n, failed, gzipped.Load(), st.Healed, st.ClosesQueued, st.ClosedByProxy, s.Stats().Faults)
	if ok == 0 {
		t.Error("no statement succeeded through the healing proxy")
	}
	noSecret(t, s, "proxy log", log.String())
	_ = sim.Faults{}
}
