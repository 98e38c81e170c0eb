package poller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// endedWorkspace lists ended operations from its "query history" (with
// their end) and answers per-operation status from open: true or false
// tells openness, a missing entry cannot tell (the answer a strict server
// gives a handle rebuilt from a statement id). It counts status calls.
type endedWorkspace struct {
	mu    sync.Mutex
	ended map[string]time.Time // id → end
	open  map[string]bool
	calls map[string]int
}

func newEndedWorkspace() *endedWorkspace {
	return &endedWorkspace{ended: map[string]time.Time{}, open: map[string]bool{}, calls: map[string]int{}}
}

func (w *endedWorkspace) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []sources.Discovered
	for id, at := range w.ended {
		out = append(out, sources.Discovered{Op: model.Operation{StatementID: id, State: model.StateFinished, CompletedAt: at},
			Ref: sources.Ref{StatementID: id}})
	}
	return out, nil
}

func (w *endedWorkspace) Status(_ context.Context, ref sources.Ref) (sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls[ref.StatementID]++
	o, ok := w.open[ref.StatementID]
	if !ok {
		return sources.Status{}, fmt.Errorf("GetOperationStatus: INVALID_HANDLE: %w: %w", sources.ErrHandleGone, sources.ErrHandleUnverified)
	}
	return sources.Status{State: model.StateFinished, CompletedAt: w.ended[ref.StatementID], Open: &o, Source: model.StatusViaThrift}, nil
}

func (w *endedWorkspace) BatchLimit() int { return 100 }

func (w *endedWorkspace) StatusBatch(_ context.Context, refs []sources.Ref) (map[string]sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]sources.Status{}
	for _, r := range refs {
		if at, ok := w.ended[r.StatementID]; ok {
			out[r.StatementID] = sources.Status{State: model.StateFinished, CompletedAt: at, Source: model.StatusViaHistory}
		}
	}
	return out, nil
}

func (w *endedWorkspace) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.calls {
		n += c
	}
	return n
}

var beliefThresholds = model.Thresholds{InactivityWarn: 30 * time.Second, ServerIdleTimeout: 5 * time.Minute, LeakAfter: time.Minute}

// An operation that ended long before dbxtop started, still open on the
// server, is asked about on the first round and flagged UNCLOSED: it is
// never retired unasked because it ended long ago (the window counts
// from when dbxtop first could ask).
func TestOldLeakIsAskedOnTheFirstRound(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			w := newEndedWorkspace()
			clk := newFakeClock()
			w.ended["old-leak"] = clk.Now().Add(-2 * time.Hour)
			w.open["old-leak"] = true
			w.ended["old-closed"] = clk.Now().Add(-2 * time.Hour)
			w.open["old-closed"] = false
			o := Options{Discoverer: w, Status: w, Clock: clk, Thresholds: beliefThresholds}
			if batch {
				o.Batch = w
			}
			e := NewEngine(o)
			if err := e.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, v := range e.Snapshot().Operations {
				switch v.StatementID {
				case "old-leak":
					if v.Open == nil || !*v.Open || !hasFlag(v, model.FlagUnclosed) {
						t.Errorf("the old leak: open %v, flags %v; want open and UNCLOSED", v.Open, v.Flags)
					}
				case "old-closed":
					if v.Open == nil || *v.Open || len(v.Flags) > 0 {
						t.Errorf("the old closed operation: open %v, flags %v; want closed, no flag", v.Open, v.Flags)
					}
				}
			}
		})
	}
}

// Ended operations no source can tell about are asked a bounded number
// of times on a backoff, then shown with openness unknown and the reason;
// after the bound each costs at most one call per 10 operation-minutes,
// and once openness can no longer matter none is followed any more.
func TestCannotTellIsAskedABoundedNumberOfTimes(t *testing.T) {
	w := newEndedWorkspace()
	const n = 100
	start := newFakeClock().Now()
	for i := range n {
		w.ended[opID(i)] = start.Add(-30 * time.Second)
	}
	h := startEngine(t, Options{Discoverer: w, Status: w, Thresholds: beliefThresholds})
	h.run(10*time.Minute, 5*time.Second)
	first := w.total()
	// The bound: openAsksOnBackoff asks, then the window's last one
	// (the window is 5 × --leak-after + 1m = 6 minutes here).
	if max := n * (openAsksOnBackoff + 1); first > max {
		t.Errorf("%d status calls in the first 10 minutes, want at most %d", first, max)
	}
	h.run(60*time.Minute, 30*time.Second)
	if later := w.total() - first; later > 0 {
		t.Errorf("%d status calls in the next 60 minutes, want none: openness can no longer matter", later)
	}
	if f := h.e.Health().Followed; f != 0 {
		t.Errorf("%d operations still followed after 70 minutes, want 0", f)
	}
	for _, v := range h.e.Snapshot().Operations {
		if v.Open != nil || len(v.Flags) > 0 || !strings.Contains(v.StatusNote, "whether it is open is unknown") {
			t.Fatalf("%s: open %v, flags %v, note %q; want unknown, no flag, the reason", v.StatementID, v.Open, v.Flags, v.StatusNote)
		}
	}
}

// Past the backoff, an ended operation of unknown openness is asked at
// most once per openAskEvery while its window lasts.
func TestCannotTellAfterTheBoundAtMostOnePerTenMinutes(t *testing.T) {
	w := newEndedWorkspace()
	start := newFakeClock().Now()
	w.ended["x"] = start
	th := beliefThresholds
	th.LeakAfter = 10 * time.Minute // a 51-minute window
	h := startEngine(t, Options{Discoverer: w, Status: w, Thresholds: th})
	h.run(5*time.Minute, time.Second)
	at := w.total()
	if at != openAsksOnBackoff {
		t.Fatalf("%d asks on the backoff, want %d", at, openAsksOnBackoff)
	}
	for range 4 {
		h.run(10*time.Minute, 5*time.Second)
		if got := w.total() - at; got > 1 {
			t.Fatalf("%d asks in 10 minutes after the bound, want at most 1", got)
		}
		at = w.total()
	}
}

// proxiedWorkspace is what the engine sees through a proxy after the
// fact: query history lists what it lists (ended), the proxy adds
// operations only it saw with its account, and per-operation status on
// a strict server cannot tell (ErrHandleUnverified) unless the proxy's
// proof says open.
type proxiedWorkspace struct {
	mu      sync.Mutex
	history map[string]sources.Status // id → what history lists
	proxy   map[string]*model.ProxyAccount
	proven  map[string]bool // the proxy proves it open (it relayed the handle, saw no close)
}

func (w *proxiedWorkspace) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []sources.Discovered
	for id, st := range w.history {
		op := model.Operation{StatementID: id, State: st.State, CompletedAt: st.CompletedAt}
		if p := w.proxy[id]; p != nil {
			op.Proxy, op.ClientActivityKnown, op.ClientLastActivity = p, true, p.LastClientRPC
		}
		out = append(out, sources.Discovered{Op: op, Ref: sources.Ref{StatementID: id}})
	}
	for id, p := range w.proxy {
		if _, ok := w.history[id]; !ok {
			out = append(out, sources.Discovered{Op: model.Operation{StatementID: id, Proxy: p, ClientActivityKnown: true, ClientLastActivity: p.LastClientRPC},
				Ref: sources.Ref{StatementID: id}})
		}
	}
	return out, nil
}

func (w *proxiedWorkspace) Status(_ context.Context, ref sources.Ref) (sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, listed := w.history[ref.StatementID]
	if !listed {
		return sources.Status{}, fmt.Errorf("GetStatement: RESOURCE_DOES_NOT_EXIST: %w: %w", sources.ErrHandleGone, sources.ErrHandleUnverified)
	}
	st.Source, st.Note = model.StatusViaHistory, "from query history"
	if p := w.proxy[ref.StatementID]; p != nil {
		st.Proxy, st.ClientLastActivity = p, &p.LastClientRPC
		if w.proven[ref.StatementID] {
			open := true
			st.Open, st.OpenByProxy = &open, true
		}
	}
	return st, nil
}

// A proxied leak is UNCLOSED on the proxy's proof for as long as the
// server's reaper of ended operations could not have acted
// (--server-leak-timeout from the later of its end and its client's last
// call), well past the inactivity reaper's timeout; then its openness is
// unknown, with the reason.
func TestProxiedLeakUnclosedUntilTheServerLeakTimeout(t *testing.T) {
	start := newFakeClock().Now()
	end := start.Add(-8 * time.Minute) // older than --server-idle-timeout (7m10s)
	w := &proxiedWorkspace{
		history: map[string]sources.Status{"leak": {State: model.StateFinished, CompletedAt: end}},
		proxy:   map[string]*model.ProxyAccount{"leak": {LastClientRPC: end.Add(time.Second), CloseOutcome: sources.ProxyOpen}},
		proven:  map[string]bool{"leak": true},
	}
	th := model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 430 * time.Second, LeakAfter: 2 * time.Minute}
	h := startEngine(t, Options{Discoverer: w, Status: w, Thresholds: th})
	h.run(2*time.Minute, time.Second)
	if v := h.op("leak"); v.Open == nil || !*v.Open || !hasFlag(v, model.FlagUnclosed) || model.EvidenceOf(v.Operation).Open.Source != model.EvidenceViaProxy {
		t.Fatalf("10 minutes after its end: open %v (evidence %+v), flags %v; want open on the proxy's word, UNCLOSED",
			v.Open, model.EvidenceOf(v.Operation).Open, v.Flags)
	}
	h.run(14*time.Minute, 5*time.Second) // 24 minutes after its end
	v := h.op("leak")
	if v.Open != nil || hasFlag(v, model.FlagUnclosed) || !strings.Contains(v.StatusNote, "--server-leak-timeout 23m") || model.EvidenceOf(v.Operation).Open.Source != "" {
		t.Fatalf("24 minutes after its end: open %v, flags %v, note %q; want unknown, no UNCLOSED, the reason", v.Open, v.Flags, v.StatusNote)
	}
}

// After serve restarts behind a proxy, the proxy still reports
// statements from before as running; the server no longer has them and
// answers "cannot tell". None is INACTIVE or STALE (nothing pages for a
// statement the server no longer runs): each is shown possibly reaped,
// and query history's end, when it comes, replaces the proxy's word.
func TestProxysRunningOlderThanTheReaperIsPossiblyReaped(t *testing.T) {
	start := newFakeClock().Now()
	w := &proxiedWorkspace{history: map[string]sources.Status{}, proxy: map[string]*model.ProxyAccount{}}
	for i := range 5 {
		w.proxy[opID(i)] = &model.ProxyAccount{LastClientRPC: start.Add(-18 * time.Minute), CloseOutcome: sources.ProxyOpen}
	}
	th := model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 430 * time.Second, LeakAfter: 2 * time.Minute}
	h := startEngine(t, Options{Discoverer: w, Status: w, Thresholds: th})
	h.run(10*time.Minute, 2*time.Second)
	for _, v := range h.e.Snapshot().Operations {
		if len(v.Flags) > 0 || v.ReapedIn != nil || !strings.HasPrefix(v.StatusNote, possiblyReapedNote) {
			t.Fatalf("%s: flags %v, reaper countdown %v, note %q; want no flag, no countdown, possibly reaped", v.StatementID, v.Flags, v.ReapedIn, v.StatusNote)
		}
	}
	for _, ev := range h.drain() {
		if ev.Kind == model.EventFlagRaised {
			t.Fatalf("a flag was raised: %s", ev.Message)
		}
	}
	// History lists its end (the server's reaper failed it).
	w.mu.Lock()
	w.history[opID(0)] = sources.Status{State: model.StateFailed, CompletedAt: start.Add(-11 * time.Minute), ErrorMessage: "Query has been timed out due to inactivity."}
	w.mu.Unlock()
	h.run(time.Minute, time.Second)
	if v := h.op(opID(0)); v.State != model.StateFailed || strings.HasPrefix(v.StatusNote, possiblyReapedNote) {
		t.Fatalf("after history's end: state %s, note %q; want FAILED from history", v.State, v.StatusNote)
	}
}
