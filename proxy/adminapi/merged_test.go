package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// fakeProxy is a proxy's admin API on loopback whose facts, version and
// availability a test sets.
type fakeProxy struct {
	srv *httptest.Server

	mu      sync.Mutex
	ops     []sources.ProxyOperation
	version string
	down    bool
	acted   []string // "close s1", …
}

func newFakeProxy(t *testing.T, version string, ops ...sources.ProxyOperation) *fakeProxy {
	p := &fakeProxy{ops: ops, version: version}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.down {
			http.Error(w, `{"error_code":"TEMPORARILY_UNAVAILABLE","message":"down for the test"}`, http.StatusServiceUnavailable)
			return
		}
		switch {
		case r.URL.Path == PathHealth:
			_ = json.NewEncoder(w).Encode(Health{Status: "ok", UpstreamReachable: true, Version: p.version})
		case r.URL.Path == PathOperations:
			if r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			_ = json.NewEncoder(w).Encode(OperationsDoc{Operations: p.ops})
		case strings.HasPrefix(r.URL.Path, PathOperations+"/") && r.Method == http.MethodPost:
			rest := strings.Split(strings.TrimPrefix(r.URL.Path, PathOperations+"/"), "/")
			p.acted = append(p.acted, rest[1]+" "+rest[0])
			_ = json.NewEncoder(w).Encode(map[string]bool{"ok": true})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProxy) set(f func(*fakeProxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *fakeProxy) name() string { return strings.TrimPrefix(p.srv.URL, "http://") }

// nothing is dbxtop's own side: it discovers nothing and its status
// tells neither openness nor client activity (a real workspace's).
type nothing struct{ closed []string }

func (nothing) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	return nil, nil
}
func (nothing) Status(context.Context, sources.Ref) (sources.Status, error) {
	return sources.Status{State: model.StateRunning}, nil
}
func (n *nothing) Close(_ context.Context, ref sources.Ref) error {
	n.closed = append(n.closed, ref.StatementID)
	return nil
}
func (n *nothing) Cancel(context.Context, sources.Ref) error { return nil }

type targetList struct {
	mu sync.Mutex
	ts []Target
}

func (l *targetList) Targets(context.Context) ([]Target, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ts), nil
}

func once(ctx context.Context, _ string, fn func(context.Context) error) error { return fn(ctx) }

func discover(t *testing.T, m *Merged) (map[string]sources.Discovered, error) {
	t.Helper()
	ds, err := m.Discover(context.Background(), once)
	out := map[string]sources.Discovered{}
	for _, d := range ds {
		if _, dup := out[d.Op.StatementID]; dup {
			t.Fatalf("operation %s listed twice", d.Op.StatementID)
		}
		out[d.Op.StatementID] = d
	}
	return out, err
}

// TestMergedByOperation: three proxies behind a load balancer each saw a
// part of the calls; dbxtop shows one row per operation with the latest
// client call from any, the close that says most, and which proxies saw
// it. A proxy that stops answering turns only what it alone saw into
// unknown with the reason; actions go through a proxy that saw the
// operation and fail clearly when none answers; a target no longer listed
// is forgotten with its facts.
func TestMergedByOperation(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 19, 0, 0, 0, time.UTC)
	ce := &model.ErrorInfo{Kind: model.KindTransport, Call: "CloseOperation", Message: "connection reset"}
	p1 := newFakeProxy(t, "1.4.0",
		sources.ProxyOperation{StatementID: "shared", State: model.StateRunning, StartedAt: t0, LastClientRPCAt: t0.Add(time.Second),
			Close: sources.ProxyClose{Outcome: sources.ProxyOpen}, Actions: []sources.ProxyEvent{{At: t0.Add(3 * time.Second), Kind: "heal", Message: "retried"}}},
		sources.ProxyOperation{StatementID: "closedelsewhere", State: model.StateFinished, StartedAt: t0, LastClientRPCAt: t0,
			Close: sources.ProxyClose{Outcome: sources.ProxyCloseFailed, ClientAttempts: 1, ClientError: ce, LastError: ce, Queued: true, NextTry: t0.Add(time.Minute)}})
	p2 := newFakeProxy(t, "1.4.0",
		sources.ProxyOperation{StatementID: "shared", State: model.StateRunning, LastClientRPCAt: t0.Add(5 * time.Second), LearnedAfterStart: true,
			Close: sources.ProxyClose{Outcome: sources.ProxyOpen}, Actions: []sources.ProxyEvent{{At: t0.Add(2 * time.Second), Kind: "heal", Message: "retried"}}},
		sources.ProxyOperation{StatementID: "closedelsewhere", State: model.StateFinished, LastClientRPCAt: t0.Add(2 * time.Second), LearnedAfterStart: true,
			Close: sources.ProxyClose{Outcome: sources.ProxyClosed, ClientAttempts: 1}})
	p3 := newFakeProxy(t, "1.5.0",
		sources.ProxyOperation{StatementID: "sidecar", State: model.StateRunning, StartedAt: t0, LastClientRPCAt: t0.Add(4 * time.Second),
			Close: sources.ProxyClose{Outcome: sources.ProxyOpen}})
	tl := &targetList{ts: []Target{{URL: p1.srv.URL, Token: "tok"}, {URL: p2.srv.URL, Token: "tok"}, {URL: p3.srv.URL, Token: "tok"}}}
	own := &nothing{}
	m := MergeAll(tl, "dbxtop/test", own, own, own)
	defer m.CloseIdleConnections()

	ds, err := discover(t, m)
	if err != nil {
		t.Fatalf("every proxy answers: %v", err)
	}
	// closedelsewhere is closed: only the open ones a proxy alone saw are followed.
	if len(ds) != 2 {
		t.Fatalf("want one row per open operation (2), got %d: %v", len(ds), ds)
	}
	sh := ds["shared"].Op
	if !sh.ClientActivityKnown || !sh.ClientLastActivity.Equal(t0.Add(5*time.Second)) {
		t.Errorf("shared: the latest client call of any proxy, want %v, got %v (known %v)", t0.Add(5*time.Second), sh.ClientLastActivity, sh.ClientActivityKnown)
	}
	if got, want := sh.Proxy.SeenBy, []string{p1.name(), p2.name()}; !slices.Equal(got, sortedCopy(want)) {
		t.Errorf("shared seen by %v, want %v", got, sortedCopy(want))
	}
	if len(sh.Proxy.Actions) != 2 || !strings.Contains(sh.Proxy.Actions[0], "via "+p2.name()) {
		t.Errorf("shared: actions of both proxies, oldest first, each naming its proxy: %q", sh.Proxy.Actions)
	}
	st, err := m.Status(context.Background(), sources.Ref{StatementID: "closedelsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Proxy.CloseOutcome != sources.ProxyClosed || st.Open == nil || *st.Open || st.Proxy.ClientCloseError == nil ||
		st.Proxy.ClientCloseAttempts != 2 || !st.Proxy.NextTry.IsZero() {
		t.Errorf("a close that succeeded on one proxy wins over the other's failed one, which stays in the account: %+v open=%v", st.Proxy, st.Open)
	}
	if skew := model.ProxyVersionSkew(m.ProxyStatuses()); !strings.Contains(skew, "1.4.0") || !strings.Contains(skew, "1.5.0 on "+p3.name()) {
		t.Errorf("version skew: %q", skew)
	}

	// The close of an operation two proxies saw goes through the one
	// that saw its start (p1: it relayed ExecuteStatement's handle).
	if err := m.Close(context.Background(), sources.Ref{StatementID: "shared"}); err != nil {
		t.Fatal(err)
	}
	if p1.acted == nil || p2.acted != nil || own.closed != nil {
		t.Errorf("close through the proxy that saw the start: p1 %v, p2 %v, own %v", p1.acted, p2.acted, own.closed)
	}

	// p3 stops answering: its sidecar's client activity and openness
	// turn unknown with the reason; the others' facts stay.
	p3.set(func(p *fakeProxy) { p.down = true })
	ds, err = discover(t, m)
	var partial *sources.PartialError
	if !errors.As(err, &partial) || !strings.Contains(err.Error(), p3.name()) {
		t.Fatalf("a proxy down is reported as partial: %v", err)
	}
	if len(ds) != 2 {
		t.Fatalf("the rows stay (2), got %d", len(ds))
	}
	st, err = m.Status(context.Background(), sources.Ref{StatementID: "sidecar"})
	if err != nil {
		t.Fatal(err)
	}
	if !st.ClientActivityUnknown || st.ClientLastActivity != nil || st.Open != nil || !st.OpenUnknown ||
		!strings.Contains(st.Note, p3.name()) || st.Proxy.Unknown == "" || !strings.Contains(st.Proxy.Unknown, "TEMPORARILY_UNAVAILABLE") {
		t.Errorf("sidecar of a proxy down: want client activity and openness unknown with the reason, got %+v proxy %+v", st, st.Proxy)
	}
	st, err = m.Status(context.Background(), sources.Ref{StatementID: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	if st.ClientActivityUnknown || st.ClientLastActivity == nil || st.Proxy.Unknown != "" || st.Open == nil || !*st.Open {
		t.Errorf("shared, seen by proxies that answer: unchanged, got %+v proxy %+v", st, st.Proxy)
	}
	var ps3 model.ProxyStatus
	for _, p := range m.ProxyStatuses() {
		if p.Name == p3.name() {
			ps3 = p
		}
	}
	if ps3.Up || ps3.Reason == "" || ps3.Version != "1.5.0" {
		t.Errorf("p3's status: %+v", ps3)
	}
	err = m.Cancel(context.Background(), sources.Ref{StatementID: "sidecar"})
	if !errors.Is(err, ErrNoProxyAnswers) || !strings.Contains(err.Error(), p3.name()) || own.closed != nil {
		t.Errorf("an action with no proxy that saw it answering fails clearly: %v", err)
	}

	// It answers again: it rejoins.
	p3.set(func(p *fakeProxy) { p.down = false })
	if _, err := discover(t, m); err != nil {
		t.Fatal(err)
	}
	st, _ = m.Status(context.Background(), sources.Ref{StatementID: "sidecar"})
	if st.ClientActivityUnknown || st.ClientLastActivity == nil || st.Proxy.Unknown != "" {
		t.Errorf("sidecar after its proxy rejoined: %+v", st)
	}

	// p3 is no longer listed: its operation and status are gone.
	tl.mu.Lock()
	tl.ts = tl.ts[:2]
	tl.mu.Unlock()
	ds, err = discover(t, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ds["sidecar"]; ok || len(m.ProxyStatuses()) != 2 {
		t.Errorf("a target no longer listed keeps its facts (%v) or status (%d)", ok, len(m.ProxyStatuses()))
	}
}

func sortedCopy(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }

// TestMergedCapsProxies: a discovery listing more proxies than a label
// can bear is cut, with an error saying so.
func TestMergedCapsProxies(t *testing.T) {
	var ts []Target
	for i := range MaxProxies + 3 {
		ts = append(ts, Target{URL: "http://127.0.0.1:" + strconv.Itoa(1+i), Token: "tok"})
	}
	own := &nothing{}
	m := MergeAll(StaticTargets(ts), "dbxtop/test", own, own, own)
	list, cut := m.sync(ts)
	if len(list) != MaxProxies || cut != 3 {
		t.Fatalf("want %d read and 3 cut, got %d and %d", MaxProxies, len(list), cut)
	}
}

// TestMergedTargetThatCannotBeRead: a target whose token file could not
// be read is listed, down, with that reason; the others are read.
func TestMergedTargetThatCannotBeRead(t *testing.T) {
	p1 := newFakeProxy(t, "1.4.0")
	own := &nothing{}
	m := MergeAll(StaticTargets{{URL: p1.srv.URL, Token: "tok"}, {URL: "http://127.0.0.1:9", Err: errors.New("token file /x: permission denied")}},
		"dbxtop/test", own, own, own)
	defer m.CloseIdleConnections()
	_, err := discover(t, m)
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("the unreadable target's error: %v", err)
	}
	ps := m.ProxyStatuses()
	if len(ps) != 2 || !ps[0].Up || ps[1].Up || ps[1].Name != "127.0.0.1:9" || !strings.Contains(ps[1].Reason, "permission denied") {
		t.Fatalf("statuses: %+v", ps)
	}
}
