package adminapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/peertest"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// TestProvenOpenNeedsTheProxysOwnSighting: the proxy's account proves an
// operation open only when it relayed its start and nothing since closed
// it or hid it.
func TestProvenOpenNeedsTheProxysOwnSighting(t *testing.T) {
	open := sources.ProxyOperation{StatementID: "s", State: model.StateFinished, Close: sources.ProxyClose{Outcome: sources.ProxyOpen}}
	cases := []struct {
		name string
		edit func(*sources.ProxyOperation)
		want bool
	}{
		{"seen started, no close", func(*sources.ProxyOperation) {}, true},
		{"learned after its start", func(f *sources.ProxyOperation) { f.LearnedAfterStart = true }, false},
		{"answers unreadable", func(f *sources.ProxyOperation) { f.Unobserved = "undecodable" }, false},
		{"reported CLOSED", func(f *sources.ProxyOperation) { f.State = model.StateClosed }, false},
		{"the client's close refused", func(f *sources.ProxyOperation) { f.Close.Outcome = sources.ProxyCloseFailed }, true},
		{"closed by the client", func(f *sources.ProxyOperation) { f.Close.Outcome = sources.ProxyClosed }, false},
		{"closed by the server", func(f *sources.ProxyOperation) { f.Close.Outcome = sources.ProxyClosedByServer }, false},
		{"closed by the proxy", func(f *sources.ProxyOperation) { f.Close.Outcome = sources.ProxyClosedByProxy }, false},
		{"gone", func(f *sources.ProxyOperation) { f.Close.Outcome = sources.ProxyGone }, false},
	}
	for _, c := range cases {
		f := open
		c.edit(&f)
		if why, got := provenOpen(f); got != c.want || got && why == "" {
			t.Errorf("%s: proven open %v (%q), want %v", c.name, got, why, c.want)
		}
	}
}

// A refusal marks the endpoint holding the index until a later upsert to
// any of its indexes succeeds; other endpoints are untouched.
func TestApplyRefusals(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ref := &sources.ProxyRefusal{Index: "a", At: t0, Status: 429, ErrorCode: "RESOURCE_EXHAUSTED", Message: "Endpoint capacity has reached capacity limit.\x1b[2J", RequestID: "rid-1"}
	doc := sources.ProxyVectorDoc{Indexes: []sources.ProxyIndexWrites{
		{Index: "a", LastUpsertAt: t0.Add(-time.Minute), LastRefusal: ref},
		{Index: "b", LastUpsertAt: t0.Add(-2 * time.Minute)},
	}}
	ep := model.Endpoint{Name: "e1", Indexes: []model.Index{{Name: "a"}, {Name: "b"}}}
	other := model.Endpoint{Name: "e2", Indexes: []model.Index{{Name: "c"}}}
	applyRefusals(&ep, &doc)
	applyRefusals(&other, &doc)
	if !ep.Exhausted || ep.ExhaustedVia != model.LearnedViaProxy || ep.LastError == nil || ep.LastError.RequestID != "rid-1" ||
		strings.ContainsRune(ep.LastError.Message, 0x1b) || other.Exhausted {
		t.Fatalf("after the refusal: %+v %+v", ep, other)
	}
	// A later accepted upsert to another index of the endpoint: it took rows again.
	doc.Indexes[1].LastUpsertAt = t0.Add(time.Second)
	ep2 := model.Endpoint{Name: "e1", Indexes: ep.Indexes}
	applyRefusals(&ep2, &doc)
	if ep2.Exhausted || ep2.LastError != nil {
		t.Fatalf("after a later accepted upsert: %+v", ep2)
	}
}

// Every string the client decodes from a proxy's admin API is cleaned
// where it is decoded: the wire types are filled with hostile text by
// reflection, so a field added later fails here until it is cleaned.
func TestDecodedAdminStringsAreClean(t *testing.T) {
	var ops OperationsDoc
	peertest.Fill(&ops)
	var vec sources.ProxyVectorDoc
	peertest.Fill(&vec)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == PathVector {
			_ = json.NewEncoder(w).Encode(vec)
			return
		}
		_ = json.NewEncoder(w).Encode(ops)
	}))
	defer srv.Close()
	c, err := NewAdminClient(srv.URL, "token", "dbxtop/test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	got, err := c.Operations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if bad, seen := peertest.Unclean(got); len(bad) > 0 || seen == 0 {
		t.Errorf("operations: %d strings seen, unclean: %v", seen, bad)
	}
	d, err := c.Vector(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if bad, seen := peertest.Unclean(d); len(bad) > 0 || seen == 0 {
		t.Errorf("vector account: %d strings seen, unclean: %v", seen, bad)
	}
}
