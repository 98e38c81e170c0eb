package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

func factOf(t *testing.T, p *Proxy, id string) sources.ProxyOperation {
	t.Helper()
	for _, f := range p.st.snapshot() {
		if f.StatementID == id {
			return f
		}
	}
	t.Fatalf("%s is not in the admin API's answer", id)
	return sources.ProxyOperation{}
}

// A cleanly closed operation is folded at once into the compact form,
// and the admin API still says everything dbxtop reads of it: its close
// outcome (which stops dbxtop flagging it), its origin, state and the
// client's calls. One whose close failed first keeps its full record.
// Later calls on a folded operation count as on any closed one, and a
// dbxtop action on it sends nothing: the server confirmed its close.
func TestCleanCloseFolds(t *testing.T) {
	clk := &stepClock{t: time.Unix(1_000_000, 0)}
	p, err := New(Options{Upstream: "http://127.0.0.1:1", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	j := newSQLJob(p, 1)
	ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
	finished := model.StateFinished
	rq := j.sessions[0]
	rq.call = "ExecuteStatement"
	clean, cleanSecret := randomStatementID(), randomSecret()
	p.observeReply(rq, tracked{}, reply{ok: true, status: ok, opID: clean, secret: cleanSecret, state: &finished}, true)
	failed, failedSecret := randomStatementID(), randomSecret()
	p.observeReply(rq, tracked{}, reply{ok: true, status: ok, opID: failed, secret: failedSecret, state: &finished}, true)
	started := factOf(t, p, clean)

	rq.call, rq.opID, rq.secret = "CloseOperation", clean, cleanSecret
	p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
	f := factOf(t, p, clean)
	if p.st.ops[clean] != nil || p.st.folds.get(clean) == nil {
		t.Fatal("a cleanly closed operation kept its full record")
	}
	if f.Close.Outcome != sources.ProxyClosed || f.Close.ClientAttempts != 1 || f.State != model.StateFinished ||
		f.SessionID != rq.sessionID || f.HTTPPath != rq.path || f.WarehouseID != "0123456789abcdef" ||
		f.ClientApplication != started.ClientApplication || f.UserAgent != rq.ua || !f.StartedAt.Equal(started.StartedAt) ||
		!f.LastClientRPCAt.After(started.LastClientRPCAt) || f.SessionLastClientRPCAt.IsZero() {
		t.Errorf("folded account %+v (at start %+v)", f, started)
	}

	rq.opID, rq.secret = failed, failedSecret
	p.observeFailure(rq, tracked{}, 0, errors.New("connection reset by peer"))
	p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
	if g := factOf(t, p, failed); g.Close.Outcome != sources.ProxyClosed || g.Close.ClientError == nil || p.st.ops[failed] == nil {
		t.Errorf("a close that failed first lost its detail: %+v", g.Close)
	}

	// The client retries its close; another handle under the same GUID
	// is not this operation's.
	rq.opID, rq.secret = clean, cleanSecret
	p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
	rq.secret = randomSecret()
	p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
	if f := factOf(t, p, clean); f.Close.ClientAttempts != 2 || p.Stats().Mismatched != 1 {
		t.Errorf("after a retried close and a stranger's: %d client attempts, %d mismatched; want 2 and 1", f.Close.ClientAttempts, p.Stats().Mismatched)
	}
	for name, act := range map[string]func(context.Context, string) error{"close": p.Close, "cancel": p.Cancel} {
		if err := act(context.Background(), clean); !errors.Is(err, sources.ErrHandleGone) {
			t.Errorf("%s of a folded operation: %v, want ErrHandleGone (nothing sent)", name, err)
		}
	}
	if n := p.Stats().OwnCalls; n != 0 {
		t.Errorf("%d own calls for a closed operation", n)
	}
	if st := p.Stats(); st.Operations != 2 || st.OpenOperations != 0 {
		t.Errorf("stats: %d operations, %d open; want 2, 0", st.Operations, st.OpenOperations)
	}
}

// At the cap, the finished operation that closed first is evicted,
// whichever form it is in; ageing forgets both forms past retention.
func TestEvictionOrderAcrossForms(t *testing.T) {
	clk := &stepClock{t: time.Unix(1_000_000, 0)}
	p, err := New(Options{Upstream: "http://127.0.0.1:1", Clock: clk, MaxOperations: 3, RetainFinished: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
	running := model.StateRunning
	sess := newSQLJob(p, 1).sessions[0]
	start := func(id string) request {
		rq := sess
		rq.call = "ExecuteStatement"
		p.observeReply(rq, tracked{}, reply{ok: true, status: ok, opID: id, secret: []byte("0123456789abcdef"), state: &running}, true)
		rq.opID, rq.secret = id, []byte("0123456789abcdef")
		return rq
	}
	closeOK := func(rq request) {
		rq.call = "CloseOperation"
		p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
	}
	a := start("full") // closes after a failure: full record
	b := start("folded")
	a.call = "CloseOperation"
	p.observeFailure(a, tracked{}, 0, errors.New("reset"))
	closeOK(a)
	closeOK(b)
	if p.st.ops["full"] == nil || p.st.folds.get("folded") == nil {
		t.Fatal("want one operation in each form")
	}
	start("c")
	start("d") // the table is full: evicts "full", which closed first
	if p.st.has("full") || !p.st.has("folded") {
		t.Fatalf("evicted the wrong one: full held %v, folded held %v", p.st.has("full"), p.st.has("folded"))
	}
	start("e")
	if p.st.has("folded") || p.Stats().Evicted != 2 {
		t.Fatalf("the folded operation was not evicted next (%d evicted)", p.Stats().Evicted)
	}
	closeOK(start("f")) // no finished one left: "f" is not recorded
	if p.st.has("f") || p.Stats().NotRecorded != 1 {
		t.Errorf("recorded past a cap of open operations")
	}
	c := sess
	c.opID, c.secret = "c", []byte("0123456789abcdef")
	closeOK(c)
	clk.t = clk.t.Add(2 * time.Hour)
	p.st.jobs(clk.Now())
	if st := p.Stats(); st.Operations != 2 || p.st.has("c") {
		t.Errorf("after retention: %d held (want the 2 open), c held %v", st.Operations, p.st.has("c"))
	}
}
