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
	asksDone int // status calls after dbxtop could first ask about its end
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

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestBeliefFollowsTheTruth drives the engine through random operation
// lives on the fake clock — clients that close, leak or abandon, servers
// whose answers tell or cannot tell, the server's reapers, dbxtop started
// at a random moment of each life, with and without batches — and checks
// after every settle: UNCLOSED is raised exactly when the truth calls for
// it (within one refresh plus one poll of the moment it becomes
// knowable) and never on an operation the truth has closed (beyond that
// same lag); openness is unknown only where no source can tell; and each
// ended operation no source can tell about costs at most the bound of
// asks (belief.go).
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
			l := &life{id: opID(i),
				start:   t0.Add(time.Duration(rapid.Int64Range(int64(-25*time.Minute), int64(5*time.Minute)).Draw(rt, "start"))),
				run:     time.Duration(rapid.Int64Range(int64(time.Second), int64(10*time.Minute)).Draw(rt, "run")),
				kind:    rapid.SampledFrom([]string{"closes", "leaks", "abandons"}).Draw(rt, "kind"),
				closeIn: time.Duration(rapid.Int64Range(0, int64(5*time.Second)).Draw(rt, "closeIn")),
				canTell: rapid.Bool().Draw(rt, "canTell")}
			w.lives[l.id] = l
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
		switch {
		case flagged && closed && now.Sub(l.closedAt()) > lag:
			rt.Fatalf("%s: UNCLOSED %s after the server closed it (%s life)", id, now.Sub(l.closedAt()), l.kind)
		case flagged && !l.canTell:
			rt.Fatalf("%s: UNCLOSED though no source can tell whether it is open", id)
		case leaking && l.canTell && now.Sub(knowable) > lag && !flagged:
			rt.Fatalf("%s: a leak knowable for %s is not UNCLOSED (view %+v)", id, now.Sub(knowable), opString(v))
		case v != nil && l.canTell && !closed && now.Sub(knowable) > lag && v.State.Terminal() && v.Open == nil:
			rt.Fatalf("%s: openness unknown though the server tells it", id)
		}
		if !l.canTell {
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
