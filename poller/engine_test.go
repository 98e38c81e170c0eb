package poller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
)

func opID(i int) string { return fmt.Sprintf("01ef0000-0000-4000-8000-%012d", i) }

// The schedule: ~1 s while young, ~2 s under a minute, 3.05 s ± 8 % when
// long-running: at most 20 status calls per operation-minute.
func TestEngineAdaptiveSchedule(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	clk0 := newFakeClock().Now()
	s.add(srvOp{ID: opID(1), State: "RUNNING", Open: true, StartedAt: clk0})
	s.add(srvOp{ID: opID(2), State: "RUNNING", Open: true, StartedAt: clk0.Add(-10 * time.Minute)})
	h := startEngine(t, sourceOptions(src))
	h.run(10*time.Second, 50*time.Millisecond)
	young, old := h.op(opID(1)).Poll.OK, h.op(opID(2)).Poll.OK
	if young < 9 || young > 12 {
		t.Errorf("young op: %d polls in its first 10s, want ~10", young)
	}
	if old < 3 || old > 5 {
		t.Errorf("long-running op: %d polls in 10s, want ~3", old)
	}
	h.run(50*time.Second, 50*time.Millisecond)
	if y := h.op(opID(1)).Poll.OK - young; y < 23 || y > 28 {
		t.Errorf("young op: %d polls between 10s and 60s, want ~25", y)
	}
	before := h.op(opID(2)).Poll.OK
	h.run(5*time.Minute, 100*time.Millisecond)
	perMin := float64(h.op(opID(2)).Poll.OK-before) / 5
	if perMin > 20 || perMin < 18 {
		t.Errorf("long-running op: %.1f status calls per minute, want 18..20", perMin)
	}
	t.Logf("long-running: %.1f status calls/op-minute", perMin)
}

// Done-when (b): half of all status calls are reset (every other call
// for each operation). Every poll succeeds after its retry, no operation
// is dropped, and every retry arrives on a new connection, never on the
// one that failed nor on another pooled one.
func TestEngineHalfResets(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	start := newFakeClock().Now()
	const n = 20
	for i := range n {
		s.add(srvOp{ID: opID(i), State: "RUNNING", Open: true, StartedAt: start.Add(-time.Hour)})
	}
	h := startEngine(t, sourceOptions(src))
	h.run(time.Second, 100*time.Millisecond) // discovery
	calls := map[string]int{}
	s.setFault(func(r request) fault {
		if r.Path != "/status" {
			return fault{}
		}
		calls[r.ID]++
		return fault{reset: calls[r.ID]%2 == 1}
	})
	h.run(time.Minute, 100*time.Millisecond)
	var ok, retries, all, resets int
	reqs := s.requests()
	last := map[string]request{}
	for _, r := range reqs {
		if r.Path != "/status" {
			continue
		}
		if p, seen := last[r.ID]; seen && p.Fault == "reset" && r.NthOn != 1 {
			t.Errorf("retry of %s after a reset arrived as request %d on connection %d", r.ID, r.NthOn, r.Conn)
		}
		last[r.ID] = r
		if calls[r.ID] > 0 {
			all++
			if r.Fault == "reset" {
				resets++
			}
		}
	}
	for i := range n {
		v := h.op(opID(i))
		ok, retries = ok+v.Poll.OK, retries+v.Poll.Retries
		if v.Poll.Failed != 0 || hasFlag(v, model.FlagStale) || h.clk.Now().Sub(v.LastPollOKAt) > 4*time.Second {
			t.Errorf("%s: %+v flags %v", v.StatementID, v.Poll, v.Flags)
		}
	}
	if hl := h.e.Health(); hl.Followed != n {
		t.Errorf("followed %d, want %d", hl.Followed, n)
	}
	share := float64(resets) / float64(all)
	if share < 0.45 || retries != resets {
		t.Errorf("resets %d of %d status calls (%.0f%%), retries %d", resets, all, 100*share, retries)
	}
	t.Logf("half resets: %d status calls, %d reset (%.0f%%), %d retries each on a new connection, %d polls ok, 0 failed",
		all, resets, 100*share, retries, ok)
}

// Done-when (c): a 15-second total outage. Every followed operation is
// STALE during it and followed again after it; the retry budget bounds
// the calls made during the outage.
func TestEngineOutageStaleThenRecovery(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	start := newFakeClock().Now()
	const n = 50
	for i := range n {
		s.add(srvOp{ID: opID(i), State: "RUNNING", Open: true, StartedAt: start.Add(-time.Hour)})
	}
	h := startEngine(t, sourceOptions(src))
	h.run(20*time.Second, 100*time.Millisecond)
	h.drain()
	before := len(s.requests())
	retriesBefore := h.e.Health().Retries
	budgetBefore, _ := h.e.pol.Budget()

	s.setFault(func(request) fault { return fault{reset: true} })
	h.run(15*time.Second, 100*time.Millisecond)
	during := len(s.requests()) - before
	retries := h.e.Health().Retries - retriesBefore
	for i := range n {
		if v := h.op(opID(i)); !hasFlag(v, model.FlagStale) {
			t.Errorf("%s not STALE at the end of the outage: %v", v.StatementID, v.Flags)
		}
	}
	// The bound: budget/cost retries at most, plus one call per scheduled
	// poll (interval ≥ 3.05 s × 0.92) and per discovery round (refresh 5 s,
	// three attempts each, themselves paid from the same budget).
	maxRetries := int(budgetBefore / 5)
	polls := n * (int(15*time.Second/(3050*time.Millisecond*92/100)) + 1)
	bound := polls + 15/5 + 1 + maxRetries
	if retries > int64(maxRetries) || during > bound {
		t.Errorf("outage: %d requests (bound %d), %d retries (bound %d)", during, bound, retries, maxRetries)
	}
	t.Logf("15 s outage, %d ops: %d requests (bound %d = %d polls + 4 discoveries + %d budget retries), %d retries",
		n, during, bound, polls, maxRetries, retries)

	s.setFault(nil)
	h.run(10*time.Second, 100*time.Millisecond)
	for i := range n {
		v := h.op(opID(i))
		if hasFlag(v, model.FlagStale) || h.clk.Now().Sub(v.LastPollOKAt) > 4*time.Second || v.Poll.Failed == 0 {
			t.Errorf("%s not recovered: %+v %v", v.StatementID, v.Poll, v.Flags)
		}
	}
	if hl := h.e.Health(); hl.Followed != n || hl.LastError == nil || hl.LastError.Kind != model.KindTransport {
		t.Errorf("health %+v", hl)
	}
	raised, cleared := 0, 0
	for _, ev := range h.drain() {
		if ev.Flag != nil && ev.Flag.Kind == model.FlagStale {
			switch ev.Kind {
			case model.EventFlagRaised:
				raised++
			case model.EventFlagCleared:
				cleared++
			}
		}
	}
	if raised < n || cleared != n {
		t.Errorf("STALE events: raised %d cleared %d, want ≥%d and %d", raised, cleared, n, n)
	}
}

// A non-terminal operation whose polls keep failing permanently is never
// dropped: it stays followed, polled on schedule, flagged STALE.
func TestEngineNeverDropsFailingOp(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	s.add(srvOp{ID: opID(1), State: "RUNNING", Open: true, StartedAt: newFakeClock().Now().Add(-time.Hour)})
	h := startEngine(t, sourceOptions(src))
	h.run(time.Second, 100*time.Millisecond)
	s.setFault(func(r request) fault {
		if r.Path == "/status" {
			return fault{status: 403, body: errBody("PERMISSION_DENIED", "no", "r")}
		}
		return fault{}
	})
	h.run(5*time.Minute, 200*time.Millisecond)
	v := h.op(opID(1))
	if v.Poll.Failed < 90 || v.Poll.Retries != 0 || !hasFlag(v, model.FlagStale) || v.LastError == nil || v.LastError.ErrorCode != "PERMISSION_DENIED" {
		t.Fatalf("%+v %v %+v", v.Poll, v.Flags, v.LastError)
	}
	if h.e.Health().Followed != 1 {
		t.Fatal("dropped")
	}
}

func TestEngineReadOnlyRefuses(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	s.add(srvOp{ID: opID(1), State: "FINISHED", Open: true})
	o := sourceOptions(src)
	o.ReadOnly = true
	h := startEngine(t, o)
	h.run(time.Second, 100*time.Millisecond)
	ctx := context.Background()
	for name, err := range map[string]error{"adopt": h.e.Adopt(ctx, opID(1)), "close": h.e.Close(ctx, opID(1)), "cancel": h.e.Cancel(ctx, opID(1))} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	if n, _ := s.count("/close"); n != 0 || !h.e.ReadOnly() {
		t.Fatal("read-only engine called the server")
	}
	if n, _ := s.count("/cancel"); n != 0 {
		t.Fatal("read-only engine called the server")
	}
	h.stop()

	o.ReadOnly, o.Actions = false, nil
	e := NewEngine(o)
	if err := e.Close(ctx, opID(1)); !errors.Is(err, ErrNoActions) {
		t.Errorf("no actions: %v", err)
	}
	o.Actions = src
	if err := NewEngine(o).Cancel(ctx, "nope"); !errors.Is(err, ErrUnknownOperation) {
		t.Errorf("unknown: %v", err)
	}
}

// An adopted operation is closed by dbxtop when it becomes terminal.
func TestEngineAdoptThenCloseOnTerminal(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	s.add(srvOp{ID: opID(1), State: "RUNNING", Open: true})
	h := startEngine(t, sourceOptions(src))
	h.run(time.Second, 100*time.Millisecond)
	if err := h.e.Adopt(context.Background(), opID(1)); err != nil {
		t.Fatal(err)
	}
	h.run(5*time.Second, 100*time.Millisecond)
	if n, _ := s.count("/close"); n != 0 {
		t.Fatal("closed a running operation")
	}
	s.set(opID(1), func(o *srvOp) { o.State = "FINISHED" })
	h.run(3*time.Second, 100*time.Millisecond)
	v := h.op(opID(1))
	s.mu.Lock()
	closes := s.ops[opID(1)].Closes
	s.mu.Unlock()
	if closes != 1 || v.Close.State != model.CloseClosed || v.Open == nil || *v.Open || !v.Adopted || v.State != model.StateFinished {
		t.Fatalf("closes %d, op %+v", closes, v.Operation)
	}
	polls := v.Poll.OK
	h.run(30*time.Second, 500*time.Millisecond)
	if h.op(opID(1)).Poll.OK != polls {
		t.Error("a closed operation is still polled")
	}
}

// A failed close is queued and retried with backoff (2 s doubling) until
// the server says the handle is gone.
func TestEngineCloseQueueUntilHandleGone(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	s.add(srvOp{ID: opID(1), State: "FINISHED", Open: true})
	o := sourceOptions(src)
	o.Policy.Limits = map[string]retry.Limit{CallClose: {Attempts: 1}}
	h := startEngine(t, o)
	h.run(time.Second, 100*time.Millisecond)
	s.setFault(func(r request) fault {
		if r.Path == "/close" {
			return fault{status: 500, body: errBody("INTERNAL_ERROR", "close failed", "req-close-1")}
		}
		return fault{}
	})
	err := h.e.Close(context.Background(), opID(1))
	if err == nil || retry.ErrorInfoOf(err).RequestID != "req-close-1" {
		t.Fatalf("Close: %v", err)
	}
	h.settle()
	v := h.op(opID(1))
	if v.Close.State != model.CloseFailed || v.Close.Attempts != 1 || !hasFlag(v, model.FlagCloseFailed) {
		t.Fatalf("after a failed close: %+v flags %v", v.Close, v.Flags)
	}
	if wait := v.Close.NextTry.Sub(h.clk.Now()); wait < time.Second || wait > 2*time.Second {
		t.Fatalf("next try in %s, want [1s, 2s]", wait)
	}
	// Watch the queue's attempts: the gaps grow (equal jitter of 2, 4, 8, 16 s).
	var at []time.Time
	for len(at) < 4 {
		h.run(250*time.Millisecond, 250*time.Millisecond)
		if c := h.op(opID(1)).Close.Attempts; c > len(at)+1 {
			at = append(at, h.clk.Now())
		}
		if h.clk.Now().Sub(v.Close.NextTry) > 2*time.Minute {
			t.Fatal("queue stalled")
		}
	}
	for i := 1; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		ceil := time.Duration(2<<i) * time.Second
		if gap < ceil/2-300*time.Millisecond || gap > ceil+300*time.Millisecond {
			t.Errorf("gap %d = %s, want in [%s, %s]", i, gap, ceil/2, ceil)
		}
	}
	// The server reaps it: the next attempt learns the handle is gone.
	s.set(opID(1), func(o *srvOp) { o.Open = false })
	s.setFault(nil)
	h.run(time.Minute, 500*time.Millisecond)
	v = h.op(opID(1))
	if v.Close.State != model.CloseClosed || !v.Close.NextTry.IsZero() || hasFlag(v, model.FlagCloseFailed) {
		t.Fatalf("after handle gone: %+v", v.Close)
	}
	var failedEvents int
	for _, ev := range h.drain() {
		if ev.Kind == model.EventCloseFailed {
			failedEvents++
			if ev.RequestID != "req-close-1" || ev.Err == nil {
				t.Errorf("close-failed event without request id: %+v", ev)
			}
		}
	}
	if failedEvents < 5 {
		t.Errorf("%d close-failed events", failedEvents)
	}
	if left := h.e.Shutdown(context.Background()); len(left) != 0 {
		t.Errorf("Shutdown left %v", left)
	}
}

// Shutdown makes one last attempt for queued closes and reports the rest.
func TestEngineShutdownClosesQueued(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	s.add(srvOp{ID: opID(1), State: "FINISHED", Open: true})
	s.add(srvOp{ID: opID(2), State: "FINISHED", Open: true})
	o := sourceOptions(src)
	o.Policy.Limits = map[string]retry.Limit{CallClose: {Attempts: 1}}
	h := startEngine(t, o)
	h.run(time.Second, 100*time.Millisecond)
	s.setFault(func(r request) fault {
		if r.Path == "/close" {
			return fault{status: 503}
		}
		return fault{}
	})
	for _, id := range []string{opID(1), opID(2)} {
		if err := h.e.Adopt(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	h.run(500*time.Millisecond, 100*time.Millisecond)
	h.stop()
	// Still failing: one attempt each, both reported open.
	before, _ := s.count("/close")
	if left := h.e.Shutdown(context.Background()); len(left) != 2 || left[0] != opID(1) || left[1] != opID(2) {
		t.Fatalf("left %v", left)
	}
	if after, _ := s.count("/close"); after != before+2 {
		t.Fatalf("%d close requests at shutdown, want 2", after-before)
	}
	// The server recovers: the last attempt closes both.
	s.setFault(nil)
	if left := h.e.Shutdown(context.Background()); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
	for _, id := range []string{opID(1), opID(2)} {
		if v := h.op(id); v.Close.State != model.CloseClosed {
			t.Errorf("%s: %+v", id, v.Close)
		}
	}
}

func TestEngineRunOnceAndErrors(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	for i := range 3 {
		s.add(srvOp{ID: opID(i), State: "RUNNING", Open: true})
	}
	o := sourceOptions(src)
	o.Clock = newAutoClock()
	e := NewEngine(o)
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := e.Snapshot()
	if len(snap.Operations) != 3 || snap.Operations[0].Poll.OK != 1 || e.Health().Polls != 3 {
		t.Fatalf("snapshot %+v", snap.Operations)
	}
	s.setFault(func(request) fault {
		return fault{status: 401, body: errBody("UNAUTHENTICATED", "bad token", "req-401")}
	})
	err := e.RunOnce(context.Background())
	info := retry.ErrorInfoOf(err)
	if err == nil || info.RequestID != "req-401" || info.HTTPStatus != 401 {
		t.Fatalf("err %v info %+v", err, info)
	}
	// The discovery failure, and the status polls that failed the same way
	// (the round read no status: "unread").
	errs := e.Snapshot().Errors
	var disc, unread bool
	for _, x := range errs {
		disc = disc || (x.Call == "ListQueries" && x.ErrorCode == "UNAUTHENTICATED")
		unread = unread || (x.Kind == model.KindUnread && x.ErrorCode == "UNAUTHENTICATED")
	}
	if len(errs) != 2 || !disc || !unread {
		t.Fatalf("snapshot errors %+v", errs)
	}
}

func TestEventsNeverBlockDropOldest(t *testing.T) {
	e := NewEngine(Options{})
	for i := range cap(e.out.ch) + 10 {
		e.out.emit(model.Event{Message: fmt.Sprint(i)})
	}
	if e.Health().EventsDropped != 10 {
		t.Fatalf("dropped %d", e.Health().EventsDropped)
	}
	if ev := <-e.Events(); ev.Message != "10" {
		t.Fatalf("oldest kept is %q, want 10", ev.Message)
	}
}

// What an action changes shows in the very next snapshot, while the view
// of the operation is otherwise exact for a long time (nothing flagged):
// the engine reuses a view without comparing its operation only until
// something touched it.
func TestActionsShowInTheNextSnapshot(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	s.add(srvOp{ID: opID(1), State: "RUNNING", Open: true})
	s.add(srvOp{ID: opID(2), State: "FINISHED", Open: true})
	h := startEngine(t, sourceOptions(src))
	h.run(time.Second, 100*time.Millisecond)
	if v := h.op(opID(1)); v.Adopted || len(v.Flags) != 0 {
		t.Fatalf("before: %+v", v)
	}
	if err := h.e.Adopt(context.Background(), opID(1)); err != nil {
		t.Fatal(err)
	}
	if v := h.op(opID(1)); !v.Adopted {
		t.Fatal("Adopt does not show in the next snapshot")
	}
	// A close in flight shows pending while it waits for the server.
	gate, arrived := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release) // a failure below must not leave the server waiting
	s.setFault(func(r request) fault {
		if r.Path == "/close" {
			arrived <- struct{}{}
			return fault{gate: gate}
		}
		return fault{}
	})
	if v := h.op(opID(2)); v.Close.State != model.CloseNA {
		t.Fatalf("before the close: %+v", v.Close)
	}
	done := make(chan error, 1)
	go func() { done <- h.e.Close(context.Background(), opID(2)) }()
	select {
	case <-arrived:
	case err := <-done:
		t.Fatalf("Close returned %v before the server saw it", err)
	}
	if v := h.op(opID(2)); v.Close.State != model.ClosePending {
		t.Fatalf("while the close is in flight: %+v", v.Close)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := h.op(opID(2)); v.Close.State != model.CloseClosed || v.Close.Attempts != 1 {
		t.Fatalf("after the close: %+v", v.Close)
	}
}
