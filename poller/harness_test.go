package poller

import (
	"context"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// harness runs an engine on a fake clock and moves time in steps, waiting
// after each step until the engine has settled (nothing can happen before
// the clock moves again). No test here waits on the wall clock.
type harness struct {
	t       *testing.T
	e       *Engine
	clk     *fakeClock
	changed chan struct{}
	cancel  context.CancelFunc
	done    chan error
}

func startEngine(t *testing.T, o Options) *harness {
	t.Helper()
	clk := newFakeClock()
	o.Clock = clk
	h := &harness{t: t, clk: clk, changed: make(chan struct{}, 1), done: make(chan error, 1)}
	wake := func() {
		select {
		case h.changed <- struct{}{}:
		default:
		}
	}
	o.Policy.Waiting = wake // a backoff wait started
	h.e = NewEngine(o)
	h.e.loop.changed = wake
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.e.Run(ctx) }()
	t.Cleanup(h.stop)
	h.settle()
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		h.t.Errorf("Run returned %v on cancel, want nil", err)
	}
	if err := checkEngine(h.e); err != nil {
		h.t.Error(err)
	}
}

func (h *harness) settle() {
	h.t.Helper()
	failsafe := time.NewTimer(20 * time.Second) // only against a hang; never reached when correct
	defer failsafe.Stop()
	for !h.e.settled() {
		select {
		case <-h.changed:
		case <-failsafe.C:
			n, all := h.e.pol.SleepingUntil(h.clk.Now())
			h.t.Fatalf("engine did not settle: busy %d parked %v loopAt %s now %s wake %d sleepers %d allAfter %v",
				h.e.loop.busy.Load(), h.e.loop.parked.Load(), time.Unix(0, h.e.loop.at.Load()).UTC(), h.clk.Now(), len(h.e.loop.wake), n, all)
		}
	}
	// Settled, the engine's parts are at rest: each checks its own.
	if err := checkEngine(h.e); err != nil {
		h.t.Fatal(err)
	}
}

// run advances the clock by d in steps of step, settling after each.
func (h *harness) run(d, step time.Duration) {
	h.t.Helper()
	for t := time.Duration(0); t < d; t += step {
		h.clk.Advance(step)
		h.settle()
	}
}

func (h *harness) op(id string) *model.OperationView {
	h.t.Helper()
	for _, v := range h.e.Snapshot().Operations {
		if v.StatementID == id {
			return v
		}
	}
	h.t.Fatalf("operation %s not in the snapshot", id)
	return nil
}

func hasFlag(v *model.OperationView, k model.FlagKind) bool {
	for _, f := range v.Flags {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// drain returns the events published so far.
func (h *harness) drain() []model.Event {
	var out []model.Event
	for {
		select {
		case ev := <-h.e.Events():
			out = append(out, ev)
		default:
			return out
		}
	}
}

func sourceOptions(src *httpSource) Options {
	return Options{Discoverer: src, Status: src, Actions: src, Idle: []sources.IdleCloser{src},
		Thresholds: model.Thresholds{InactivityWarn: 5 * time.Second, ServerIdleTimeout: 60 * time.Second, LeakAfter: time.Minute}}
}
