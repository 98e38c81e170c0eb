package poller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// A life is one operation's truth: when it starts and ends, what its
// client does, and whether the server's status answers can tell about it.
type life struct {
	id       string
	start    time.Time
	run      time.Duration
	kind     string // closes, leaks, abandons
	closeIn  time.Duration
	canTell  bool
	proxied  bool // its client's calls go through dbxtop proxy
	asksDone int  // status calls after dbxtop could first ask about its end
}

const (
	propIdle = 7*time.Minute + 10*time.Second // the server's inactivity reaper
	propLeak = 23 * time.Minute               // the server's reaper of ended operations
)

// end is when the operation ends (an abandoned one: when the server
// reaps it for inactivity).
func (l *life) end() time.Time {
	if l.kind == "abandons" {
		return l.start.Add(propIdle)
	}
	return l.start.Add(l.run)
}

// closedAt is when the server stops holding it (zero: never within the
// test): the client's close, the leak reaper, or the inactivity reaper.
func (l *life) closedAt() time.Time {
	switch l.kind {
	case "closes":
		return l.end().Add(l.closeIn)
	case "leaks":
		return l.end().Add(propLeak)
	}
	return l.end() // reaped: failed and closed at once
}

// lifeWorkspace serves lives on the harness's clock: query history lists
// every started operation with its state, and per-operation status
// answers the truth, or "cannot tell" for lives that cannot be told.
type lifeWorkspace struct {
	mu    sync.Mutex
	clk   *fakeClock
	t0    time.Time // when dbxtop started
	lives map[string]*life
	// proxyUp is when the proxy restarted and forgot what it relayed
	// before (zero: never).
	proxyUp time.Time
}

// proxyKnows: the proxy holds its account of l at now (it relayed l's
// calls and has not restarted since).
func (w *lifeWorkspace) proxyKnows(l *life, now time.Time) bool {
	return l.proxied && (w.proxyUp.IsZero() || now.Before(w.proxyUp) || !l.start.Before(w.proxyUp))
}

// proxyKnew: the proxy held its account of l throughout [from, now].
func (w *lifeWorkspace) proxyKnew(l *life, from, now time.Time) bool {
	return w.proxyKnows(l, now) && w.proxyKnows(l, from)
}

func (w *lifeWorkspace) state(l *life, now time.Time) sources.Status {
	st := sources.Status{State: model.StateRunning, StartedAt: l.start, Source: model.StatusViaHistory}
	if !now.Before(l.end()) {
		st.State, st.CompletedAt = model.StateFinished, l.end()
		if l.kind == "abandons" {
			st.State, st.ErrorMessage = model.StateFailed, "Query has been timed out due to inactivity."
		}
	}
	return st
}

func (w *lifeWorkspace) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clk.Now()
	var out []sources.Discovered
	for _, l := range w.lives {
		if now.Before(l.start) {
			continue
		}
		st := w.state(l, now)
		out = append(out, sources.Discovered{Op: model.Operation{StatementID: l.id, State: st.State, StartedAt: l.start,
			CompletedAt: st.CompletedAt, ServerError: st.ErrorMessage}, Ref: sources.Ref{StatementID: l.id}})
	}
	return out, nil
}

func (w *lifeWorkspace) Status(_ context.Context, ref sources.Ref) (sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clk.Now()
	l := w.lives[ref.StatementID]
	if from := later(l.end(), w.t0); !now.Before(from) {
		l.asksDone++
	}
	if l.proxied && !l.canTell {
		return w.proxyStatus(l, now), nil
	}
	if !l.canTell {
		return sources.Status{}, fmt.Errorf("GetOperationStatus: INVALID_HANDLE: %w: %w", sources.ErrHandleGone, sources.ErrHandleUnverified)
	}
	if !now.Before(l.closedAt()) {
		return sources.Status{}, fmt.Errorf("GetOperationStatus: INVALID_HANDLE: %w", sources.ErrHandleGone)
	}
	st := w.state(l, now)
	open := true
	st.Open, st.Source = &open, model.StatusViaThrift
	return st, nil
}

// proxyStatus is the answer for a proxied life the server's status cannot
// tell openness of (the Statement Execution API's state, adminapi.Merged
// adding the proxy's account): while the proxy holds its account, an
// ended operation it saw no close of is open by the proxy's proof, which
// cannot see the server's reapers; after a restart it proves nothing.
func (w *lifeWorkspace) proxyStatus(l *life, now time.Time) sources.Status {
	st := w.state(l, now)
	st.Source = model.StatusViaStatementAPI
	if !w.proxyKnows(l, now) {
		return st
	}
	last := l.end() // the client's last call: its fetch, at the end
	if l.kind == "abandons" {
		last = l.start
	}
	st.Proxy = &model.ProxyAccount{LastClientRPC: last}
	st.ClientLastActivity = &last
	switch {
	case l.kind == "closes" && !now.Before(l.closedAt()):
		closed := false
		st.Open = &closed
	case st.State.Terminal():
		open := true
		st.Open, st.OpenByProxy = &open, true
	}
	return st
}

func (w *lifeWorkspace) Settle(_ context.Context, _ sources.Retry, ref sources.Ref) (sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state(w.lives[ref.StatementID], w.clk.Now()), nil
}

func (w *lifeWorkspace) BatchLimit() int { return 100 }

func (w *lifeWorkspace) StatusBatch(_ context.Context, refs []sources.Ref) (map[string]sources.Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]sources.Status{}
	for _, r := range refs {
		if l := w.lives[r.StatementID]; l != nil && !w.clk.Now().Before(l.start) {
			out[r.StatementID] = w.state(l, w.clk.Now())
		}
	}
	return out, nil
}

// lifePhases are when lives start, from dbxtop's start.
var lifePhases = []time.Duration{-25 * time.Minute, -20 * time.Minute, -12 * time.Minute, -8 * time.Minute,
	-3 * time.Minute, -time.Minute, 0, 2 * time.Minute, 5 * time.Minute}

func jitter(rt *rapid.T, name string, d time.Duration) time.Duration {
	return time.Duration(rapid.Int64Range(0, int64(d)).Draw(rt, name))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestBeliefFollowsTheTruth drives the engine through random operation
// lives on the fake clock — clients that close, leak or abandon, servers
// whose answers tell or cannot tell, clients behind dbxtop proxy (whose
// proof of openness cannot see the server's reapers) and a proxy that
// restarts and forgets, the server's reapers, dbxtop started at a random
// moment of each life, with and without batches — and checks after
// every settle: UNCLOSED is raised exactly when the truth calls for it
// (within one refresh plus one poll of the moment it becomes knowable)
// and never on an operation the truth has closed (beyond that same lag),
// nor INACTIVE or STALE critical; openness is unknown only where no
// source can tell; and each ended operation no source can tell about
// costs at most the bound of asks (belief.go). Reverting the old-leak
// rule (askFrom), the aging of a proof the proxy no longer gives
// (ageHeldProxyOpen) or the inactivity reaper's exception fails it.
func TestBeliefFollowsTheTruth(t *testing.T) {
	th := model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: propIdle, LeakAfter: time.Minute, ServerLeakTimeout: propLeak}
	const refresh, step = 5 * time.Second, 5 * time.Second
	lag := refresh + time.Duration(float64(pollTerminal)*(1+pollJitter)) + step + time.Second
	rapid.Check(t, func(rt *rapid.T) {
		clk := newFakeClock() // the truth's clock, in step with the harness's (same start)
		t0 := clk.Now()
		w := &lifeWorkspace{clk: clk, t0: t0, lives: map[string]*life{}}
		n := rapid.IntRange(1, 6).Draw(rt, "operations")
		for i := range n {
			// dbxtop starts at a random moment of the life: before it, while
			// it runs, soon after its end, past the window in which its
			// openness is asked, near the leak reaper. rapid draws small
			// numbers more often, so the phase is chosen, then a jitter.
			l := &life{id: opID(i),
				start: t0.Add(rapid.SampledFrom(lifePhases).Draw(rt, "start") + jitter(rt, "startJitter", time.Minute)),
				run: rapid.SampledFrom([]time.Duration{time.Second, 30 * time.Second, 3 * time.Minute, 10 * time.Minute}).Draw(rt, "run") +
					jitter(rt, "runJitter", 30*time.Second),
				kind:    rapid.SampledFrom([]string{"closes", "leaks", "abandons"}).Draw(rt, "kind"),
				closeIn: time.Duration(rapid.Int64Range(0, int64(5*time.Second)).Draw(rt, "closeIn")),
				canTell: rapid.Bool().Draw(rt, "canTell"),
				proxied: rapid.Bool().Draw(rt, "proxied")}
			w.lives[l.id] = l
		}
		if rapid.Bool().Draw(rt, "proxyRestarts") {
			w.proxyUp = t0.Add(time.Duration(rapid.Int64Range(0, int64(20*time.Minute)).Draw(rt, "proxyRestart")))
		}
		o := Options{Discoverer: w, Status: w, Settle: w, Thresholds: th, Refresh: refresh}
		if rapid.Bool().Draw(rt, "batch") {
			o.Batch = w
		}
		h := startEngine(t, o)
		defer h.stop()
		for range int(25 * time.Minute / step) {
			clk.Advance(step) // the truth's clock first: the engine moves only with its own
			h.clk.Advance(step)
			h.settle()
			checkBeliefs(rt, h, w, th, lag)
		}
	})
}

// checkBeliefs checks the snapshot against the lives' truth at now.
func checkBeliefs(rt *rapid.T, h *harness, w *lifeWorkspace, th model.Thresholds, lag time.Duration) {
	now := h.clk.Now()
	views := map[string]*model.OperationView{}
	for _, v := range h.e.Snapshot().Operations {
		views[v.StatementID] = v
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, l := range w.lives {
		v := views[id]
		knowable := later(l.end().Add(th.LeakAfter), w.t0)
		closed := !now.Before(l.closedAt())
		leaking := l.kind == "leaks" && !closed && !now.Before(l.end().Add(th.LeakAfter))
		flagged := v != nil && hasFlag(v, model.FlagUnclosed)
		// The proxy tells while it holds its account, from the end until
		// the server's leak reaper could act.
		proxyTells := !l.canTell && w.proxyKnew(l, knowable.Add(-lag), now) && now.Before(l.end().Add(propLeak))
		switch {
		case flagged && closed && now.Sub(l.closedAt()) > lag:
			rt.Fatalf("%s: UNCLOSED %s after the server closed it (%s life, proxied %v, proxy restarts: %v at %s)",
				id, now.Sub(l.closedAt()), l.kind, l.proxied, !w.proxyUp.IsZero(), w.proxyUp.Sub(w.t0))
		case flagged && !l.canTell && !l.proxied:
			rt.Fatalf("%s: UNCLOSED though no source can tell whether it is open", id)
		case leaking && (l.canTell || proxyTells) && now.Sub(knowable) > lag && !flagged:
			rt.Fatalf("%s: a leak knowable for %s is not UNCLOSED (proxied %v; view %+v)", id, now.Sub(knowable), l.proxied, opString(v))
		case v != nil && (l.canTell || proxyTells) && !closed && now.Sub(knowable) > lag && v.State.Terminal() && v.Open == nil:
			rt.Fatalf("%s: openness unknown though a source tells it", id)
		case v != nil && !l.canTell && !proxyTells && v.Open != nil && *v.Open && closed && now.Sub(l.closedAt()) > lag:
			rt.Fatalf("%s: shown open %s after the server closed it, with no source that can tell", id, now.Sub(l.closedAt()))
		}
		if v != nil && closed && now.Sub(l.closedAt()) > lag {
			for _, f := range v.Flags {
				if (f.Kind == model.FlagInactive || f.Kind == model.FlagStale) && f.Severity == model.SeverityCritical {
					rt.Fatalf("%s: %s critical %s after the server closed it", id, f.Kind, now.Sub(l.closedAt()))
				}
			}
		}
		if !l.canTell && !l.proxied { // known open by a proxy's proof: polled until it ages
			from := later(l.end(), w.t0)
			if bound := 5 + 2 + int(now.Sub(from)/openAskEvery); now.After(from) && l.asksDone > bound {
				rt.Fatalf("%s: %d asks since it ended, over the bound of %d", id, l.asksDone, bound)
			}
		}
	}
}

func opString(v *model.OperationView) string {
	if v == nil {
		return "not in the snapshot"
	}
	return fmt.Sprintf("state %s open %v gone %v completed %s polled %s flags %v note %q last error %v",
		v.State, v.Open, v.Gone, v.CompletedAt.Format("15:04:05"), v.LastPollOKAt.Format("15:04:05"), v.Flags, v.StatusNote, v.LastError)
}
