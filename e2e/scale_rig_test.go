package e2e

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// The scale rig (issue 16, docs/performance.md "Scale"): the simulator's
// load scenario with N live operations, every answer delayed by a
// latency ± 20 %, observed by contenders one after the other in the same
// process against the same workspace:
//
//   - "dbxtop": the engine wired as cmd wires it (query history for
//     discovery and batch status, Thrift with the REST fallback for
//     per-operation calls, concurrency from latency);
//   - "before": the engine as it was before batches (every live
//     operation polled on its own, at most 16 calls in flight);
//   - "fixed 200ms" / "fixed 1s": a per-operation poller of each
//     operation of a sample, as the JDBC and Go drivers poll their own
//     statements.
//
// Calls are read from the simulator's observer_requests (every contender
// sends a dbxtop/ User-Agent, so the simulated clients' own polls are
// apart); staleness is sampled every 250 ms as the time since each live
// operation's state was last confirmed.

type scaleWorld struct {
	s     *sim.Server
	n     int
	token string
}

// startScaleWorld starts the simulator with n live operations, all
// started (and listed by query history) before it returns.
func startScaleWorld(t testing.TB, n int, latency time.Duration, lag time.Duration) *scaleWorld {
	t.Helper()
	// Speed compresses the start-up spread (20 s / speed); the clients
	// poll their statements every 20 s (LoadPoll is divided by Speed too).
	speed := 10.0
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioLoad, Ops: n, Seed: 16,
		Latency: latency, HistoryLag: lag, Speed: speed, LoadPoll: time.Duration(speed) * 20 * time.Second})
	if err != nil {
		t.Fatalf("sim.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	deadline := time.Now().Add(5 * time.Minute) // only against a hang
	for s.Stats().Operations.Running < int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d operations started", s.Stats().Operations.Running, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &scaleWorld{s: s, n: n, token: s.Token()}
}

// observerCalls sums the simulator's observer_requests (minus its own
// introspection).
func (w *scaleWorld) observerCalls() (total int64, byCall map[string]int64) {
	byCall = w.s.Stats().ObserverRequests
	for k, v := range byCall {
		if k != "SimStats" && k != "SimTruth" {
			total += v
		}
	}
	return total, byCall
}

type scaleResult struct {
	contender    string
	ops          int           // live operations observed
	window       time.Duration // measured
	calls        int64
	byCall       map[string]int64
	perOpMin     float64
	p50, p95     time.Duration // staleness
	max          time.Duration
	confirmedAll bool // every live operation confirmed within the window
	health       poller.Health
}

// engineContender follows the world with the engine for warm+window and
// measures the window. batch=false is the engine as it was before.
func (w *scaleWorld) engineContender(t testing.TB, batch bool, warm, window time.Duration) scaleResult {
	t.Helper()
	ctx := context.Background()
	ua := "dbxtop/scale"
	rest, err := databricks.New(ctx, databricks.Config{Host: w.s.URL(), Token: w.token, UserAgent: ua})
	if err != nil {
		t.Fatalf("databricks.New: %v", err)
	}
	tc, err := thrift.NewClient(thrift.Options{Host: rest.Host(), Authenticate: rest.Authenticate, UserAgent: ua})
	if err != nil {
		t.Fatalf("thrift.NewClient: %v", err)
	}
	defer rest.CloseIdleConnections()
	defer tc.CloseIdleConnections()
	o := poller.Options{Discoverer: rest, Status: realServerStatus{databricks.StatusWithFallback(tc, rest)}, ReadOnly: true,
		Thresholds: model.DefaultThresholds, Idle: []sources.IdleCloser{rest, tc}}
	name := "dbxtop"
	if batch {
		o.Batch = rest
	} else {
		name, o.MaxInFlight = "before (per-op, 16 in flight)", 16
	}
	eng := poller.NewEngine(o)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(runCtx) }()
	go func() { // drain events as the TUI does
		for {
			select {
			case <-eng.Events():
			case <-done:
				return
			}
		}
	}()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(warm + 2*time.Minute)
	for eng.Health().Followed < w.n {
		if time.Now().After(deadline) {
			t.Fatalf("%s followed %d of %d", name, eng.Health().Followed, w.n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(warm)
	c0, by0 := w.observerCalls()
	t0 := time.Now()
	var ages []time.Duration
	confirmed := map[string]bool{}
	for time.Since(t0) < window {
		time.Sleep(250 * time.Millisecond)
		s := eng.Snapshot()
		for i := range s.Operations {
			op := s.Operations[i]
			if !op.State.Live() {
				continue
			}
			at := op.LastPollOKAt
			if at.IsZero() { // never confirmed: stale since first seen
				at = op.FirstSeenAt
			}
			ages = append(ages, s.GeneratedAt.Sub(at))
			if op.LastPollOKAt.After(t0) {
				confirmed[op.StatementID] = true
			}
		}
	}
	el := time.Since(t0)
	c1, by1 := w.observerCalls()
	r := scaleResult{contender: name, ops: w.n, window: el, calls: c1 - c0, byCall: diff(by1, by0),
		confirmedAll: len(confirmed) >= w.n, health: eng.Health()}
	r.perOpMin = float64(r.calls) / (float64(w.n) * el.Minutes())
	r.p50, r.p95, r.max = quantiles(ages)
	return r
}

// fixedContender polls each operation of a sample every interval, as a
// driver polls its own statement, for window.
//
//lint:ignore U1000 not called yet in main (issue 16's fixed-interval comparison); its author decides
func (w *scaleWorld) fixedContender(t testing.TB, interval time.Duration, sample int, window time.Duration) scaleResult {
	t.Helper()
	ctx := context.Background()
	ua := "dbxtop/scale-fixed"
	tc, err := thrift.NewClient(thrift.Options{Host: w.s.URL(), Token: w.token, UserAgent: ua})
	if err != nil {
		t.Fatalf("thrift.NewClient: %v", err)
	}
	defer tc.CloseIdleConnections()
	var refs []sources.Ref
	for _, op := range w.s.Truth().Operations {
		if op.State == "RUNNING" && len(refs) < sample {
			refs = append(refs, sources.Ref{StatementID: op.StatementID, WarehouseID: op.WarehouseID})
		}
	}
	var calls atomic.Int64
	last := make([]atomic.Int64, len(refs)) // unix ns of the last good answer
	runCtx, stop := context.WithTimeout(ctx, window+interval)
	defer stop()
	var wg sync.WaitGroup
	start := time.Now()
	for i, ref := range refs {
		last[i].Store(start.UnixNano())
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A random phase, as statements start at different times.
			t := time.NewTimer(time.Duration(float64(interval) * float64(i%97) / 97))
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
				}
				calls.Add(1)
				if _, err := tc.GetOperationStatus(runCtx, ref); err == nil {
					last[i].Store(time.Now().UnixNano())
				}
				t.Reset(interval)
			}
		}()
	}
	time.Sleep(2 * interval) // every poller past its first call
	c0 := calls.Load()
	t0 := time.Now()
	var ages []time.Duration
	for time.Since(t0) < window-2*interval {
		time.Sleep(250 * time.Millisecond)
		now := time.Now()
		for i := range last {
			ages = append(ages, now.Sub(time.Unix(0, last[i].Load())))
		}
	}
	el := time.Since(t0)
	n := calls.Load() - c0
	stop()
	wg.Wait()
	r := scaleResult{contender: "fixed " + interval.String() + " (sample)", ops: len(refs), window: el, calls: n,
		perOpMin: float64(n) / (float64(len(refs)) * el.Minutes()), confirmedAll: true}
	r.p50, r.p95, r.max = quantiles(ages)
	return r
}

func diff(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 && k != "SimStats" && k != "SimTruth" {
			out[k] = d
		}
	}
	return out
}

func quantiles(xs []time.Duration) (p50, p95, mx time.Duration) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	slices.Sort(xs)
	at := func(q float64) time.Duration { return xs[int(math.Ceil(q*float64(len(xs))))-1] }
	return at(0.5), at(0.95), xs[len(xs)-1]
}

// realServerStatus answers as a real server does: no owning client's
// activity (the simulator volunteers it only as an opt-in extension; a
// source that reports it keeps live operations on per-operation polls,
// docs/retry-policy.md "Status: batch first").
type realServerStatus struct{ sources.StatusSource }

func (r realServerStatus) Status(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	st, err := r.StatusSource.Status(ctx, ref)
	st.ClientLastActivity = nil
	return st, err
}
