package databricks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/capstore"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/proxy"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// snapshot --proxy while a client's upsert through the proxy was refused
// for capacity: EXHAUSTED at once, with the server's words and request
// id, the limit learned from that refusal (in the state file), and no
// write of dbxtop's own.
func TestSnapshotProxyLearnsFromClientRefusal(t *testing.T) {
	s := startSim(t, sim.Options{Faults: "exhausted=vs-prod"})
	p, err := proxy.Start(context.Background(), proxy.Options{Upstream: s.URL(), UserAgent: "dbxtop-proxy/test"},
		proxy.ServeOptions{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	body, _ := json.Marshal(map[string]string{"inputs_json": `[{"id":"1","text":"t"}]`})
	req, _ := http.NewRequest(http.MethodPost, p.URL()+"/api/2.0/vector-search/indexes/main.support.tickets_idx/upsert-data",
		strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	req.Header.Set("User-Agent", "ingest-job/1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rid := resp.Header.Get("x-request-id")
	if resp.StatusCode != http.StatusTooManyRequests || rid == "" {
		t.Fatalf("client upsert: HTTP %d, request id %q", resp.StatusCode, rid)
	}

	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("DBXTOP_PROXY_TOKEN", p.AdminToken())
	before := s.Stats()
	r := snapshot(t, "--host", s.URL(), "--proxy", p.AdminURL(), "--json")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2 (an exhausted endpoint is critical)\nstderr: %s\n%s", r.code, r.stderr, r.stdout)
	}
	after := s.Stats()
	if d := after.Requests["UpsertDataVectorIndex"] - before.Requests["UpsertDataVectorIndex"]; d != 0 || len(after.ObserverWrites) != 0 {
		t.Errorf("dbxtop wrote: %d upserts, observer writes %v", d, after.ObserverWrites)
	}
	snap := decode(t, r.stdout)
	var seen bool
	for _, ep := range snap.Endpoints {
		if ep.Name != "vs-prod" {
			if ep.HasFlag(model.FlagExhausted) {
				t.Errorf("%s flagged EXHAUSTED", ep.Name)
			}
			continue
		}
		seen = true
		if !ep.Exhausted || !ep.HasFlag(model.FlagExhausted) {
			t.Errorf("vs-prod not EXHAUSTED: %+v", ep)
		}
		if e := ep.LastError; e == nil || e.RequestID != rid || e.Message != sim.ExhaustedMessage || e.ErrorCode != "RESOURCE_EXHAUSTED" {
			t.Errorf("server's words and request id: %+v", e)
		}
		if ep.RowLimitSource != model.LimitLearned ||
			!strings.Contains(ep.RowLimitWhy, "answering a client's upsert seen by dbxtop proxy, request "+rid) {
			t.Errorf("limit %d %q %q, want learned from the client's refusal", ep.RowLimit, ep.RowLimitSource, ep.RowLimitWhy)
		}
	}
	if !seen {
		t.Fatal("vs-prod not reported")
	}
	// The learned limit is in the one store dbxtop owns.
	path := filepath.Join(state, "dbxtop", "learned-limits.json")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("state file: %v", err)
	}
	st := capstore.Open(path, func(l string) { t.Errorf("state: %s", l) })
	var found *model.LearnedLimit
	for _, host := range []string{s.URL(), strings.TrimPrefix(s.URL(), "http://")} {
		if l := st.Learned(host, "vs-prod"); l != nil {
			found = l
		}
	}
	if found == nil || found.Via != model.LearnedViaProxy || found.RequestID != rid {
		t.Errorf("stored %+v", found)
	}
}
