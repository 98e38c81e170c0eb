package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// The fault matrix (issue 8 item 1; docs/reliability.md "Fault matrix").
// Each case runs the demo workload, compressed, with dbxtop's engine
// following it for a bounded time under one fault kind (or all of them,
// or a simulator restart), and compares what dbxtop flagged with the
// simulator's ground truth, sampled every 100 ms.
//
// Only the workload is compressed (sim Speed). dbxtop's poll schedule is
// real time (1 s / 2 s / 3.05 s, 10 s for terminal operations), so the
// thresholds are chosen against it, not divided by the speed: a warning
// threshold shorter than dbxtop's own poll interval would make any
// monitor flag healthy clients.
const (
	fmSpeed      = 6                // demo timeline ×6: abandons every 12.5 s, close_fails every 10 s
	fmWarn       = 12 * time.Second // --inactivity-warn
	fmIdle       = 45 * time.Second // sim IdleTimeout = --server-idle-timeout
	fmLeakAfter  = 20 * time.Second // --leak-after (> the 10 s terminal poll: a close is seen before UNCLOSED)
	fmLeakReap   = 60 * time.Second // sim LeakTimeout
	fmRefresh    = 2 * time.Second  // discovery period
	fmGrace      = 6 * time.Second  // discovery + first poll + flag evaluation after a threshold
	fmSample     = 100 * time.Millisecond
	fmSampleSlop = 250 * time.Millisecond // truth is sampled: allow this much at the edges
)

// fmCase is one row of the matrix.
type fmCase struct {
	name string
	spec string // --faults, from the start
	// rate is the table's "rate" column.
	rate string
	// after, when set, applies spec only after a fault-free warm-up of
	// this long (quota=1 from the start would leave nothing to follow).
	after time.Duration
	// blind: the fault leaves dbxtop unable to observe; recall is not
	// required, the errors must say why.
	blind   bool
	restart bool
}

var fmCases = []fmCase{
	{name: "none", rate: "-"},
	{name: "reset", spec: "reset=0.2", rate: "20 % of requests"},
	{name: "stale", spec: "stale=0.3", rate: "30 % of answers poison their connection"},
	{name: "throttle", spec: "throttle=0.2", rate: "20 %, Retry-After: 1"},
	{name: "throttle-bare", spec: "throttle-bare=0.2", rate: "20 %, no Retry-After"},
	{name: "unavailable", spec: "unavailable=0.2", rate: "20 %"},
	{name: "gateway", spec: "gateway=0.2", rate: "20 % (502/504 alternately)"},
	{name: "quota", spec: "quota=1", rate: "100 % after an 8 s warm-up", after: 8 * time.Second, blind: true},
	{name: "exhausted", spec: "exhausted=vs-prod", rate: "vs-prod full"},
	{name: "latency", spec: "latency=200ms", rate: "+200 ms on every request"},
	{name: "all", spec: "reset=0.05,stale=0.05,throttle=0.05,throttle-bare=0.05,unavailable=0.05,gateway=0.05,quota=0.02,exhausted=vs-prod,latency=50ms",
		rate: "5 % each, quota 2 %, +50 ms, vs-prod full"},
	{name: "restart", rate: "sim closed and restarted on the same port at 30 % of the run", restart: true},
}

// truthLog records every change of every operation the simulator reports
// (across a restart), sampled every fmSample.
type truthLog struct {
	mu  sync.Mutex
	ops map[string]*opHistory
}

type truthPoint struct {
	at time.Time
	op sim.TruthOperation
}

type opHistory struct {
	kind       string
	points     []truthPoint // one per observed change
	firstSeen  time.Time
	lastSeen   time.Time // last sample that listed it
	terminalAt time.Time // first sample in a terminal (not CLOSED) state
}

func (l *truthLog) record(at time.Time, tr sim.Truth) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range tr.Operations {
		h := l.ops[o.StatementID]
		if h == nil {
			h = &opHistory{kind: o.ClientKind, firstSeen: at}
			l.ops[o.StatementID] = h
		}
		h.lastSeen = at
		if n := len(h.points); n == 0 || h.points[n-1].op != o {
			h.points = append(h.points, truthPoint{at: at, op: o})
		}
		if h.terminalAt.IsZero() && (o.State == "FINISHED" || o.State == "FAILED" || o.State == "CANCELED") {
			h.terminalAt = at
		}
	}
}

// at is the operation as last sampled at or before t (ok false if it was
// not yet seen).
func (h *opHistory) at(t time.Time) (sim.TruthOperation, bool) {
	var out sim.TruthOperation
	ok := false
	for _, p := range h.points {
		if p.at.After(t) {
			break
		}
		out, ok = p.op, true
	}
	return out, ok
}

func (h *opHistory) last() sim.TruthOperation { return h.points[len(h.points)-1].op }

// everReaped: the simulator failed it with the inactivity message.
func (h *opHistory) everReaped() bool {
	for _, p := range h.points {
		if p.op.State == "FAILED" && strings.Contains(p.op.ErrorMessage, "inactivity") {
			return true
		}
	}
	return false
}

// fmResult is one row of docs/reliability.md "Fault matrix".
type fmResult struct {
	c                    fmCase
	dur                  time.Duration
	followed             int
	abandonsExp, abandOK int
	closeExp, closeOK    int
	raised               int // INACTIVE/UNCLOSED/REAPED/CLOSE_FAILED flags raised
	falsePos             int
	stale, staleHealthy  int
	blind                int // INACTIVE/UNCLOSED on a healthy op, true as of dbxtop's last good poll
	retries, giveUps     int64
	requests, faults     int64
	engineCalls          int64
	gone                 int
	errorSample          string
}

func TestFaultMatrix(t *testing.T) {
	budget(t)
	dur := 35 * time.Second
	if longRun() {
		dur = 90 * time.Second
	}
	var (
		mu      sync.Mutex
		results []fmResult
	)
	// The cases run at the same time, whatever -parallel says: each is
	// mostly waiting on its simulated timeline, and one after the other
	// they would take minutes. (t.Run may be called from several
	// goroutines at once.)
	t.Run("cases", func(t *testing.T) {
		var wg sync.WaitGroup
		// Every fault kind runs in CI: 35 s each, four at a time (twelve
		// at once under -race starve the shared 2-core machine: a case
		// then makes a handful of calls in 35 s and proves nothing).
		// DBXTOP_LONG=1 gives each 90 s, all at once (no -race).
		par := 4
		if longRun() {
			par = len(fmCases)
		}
		sem := make(chan struct{}, par)
		for i, c := range fmCases {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				t.Run(c.name, func(t *testing.T) {
					r := runFaultCase(t, c, int64(100+i), dur)
					mu.Lock()
					results = append(results, r)
					mu.Unlock()
				})
			}()
		}
		wg.Wait()
	})
	// Every case stopped its engine, its clients and its simulators.
	goleak.VerifyNone(t, leakOpts...)

	sort.Slice(results, func(i, j int) bool { return caseIndex(results[i].c.name) < caseIndex(results[j].c.name) })
	// Recall must have been exercised: by most cases, and by the fault-free
	// one always (its abandons and leaks are scripted).
	exercised, eligible := 0, 0
	for _, r := range results {
		if r.c.blind || r.c.restart {
			continue
		}
		eligible++
		if r.abandonsExp+r.closeExp > 0 {
			exercised++
		} else if r.c.name == "none" {
			t.Errorf("the fault-free case expected no abandoned or leaked operation (run too short?)")
		}
	}
	if 3*exercised < 2*eligible {
		t.Errorf("recall exercised by %d of %d cases only: the runs are too short to prove it", exercised, eligible)
	}
	table := fmTable(results, dur)
	t.Logf("fault matrix (%s per case):\n%s", dur, table)
	if p := os.Getenv("DBXTOP_MATRIX_OUT"); p != "" {
		if err := os.WriteFile(filepath.Clean(p), []byte(table), 0o644); err != nil {
			t.Errorf("write %s: %v", p, err)
		}
	}
}

func caseIndex(name string) int {
	for i, c := range fmCases {
		if c.name == name {
			return i
		}
	}
	return len(fmCases)
}

func runFaultCase(t *testing.T, c fmCase, seed int64, dur time.Duration) fmResult {
	token := fmt.Sprintf("dapiFM%032x", seed)
	opts := sim.Options{
		Token: token, Seed: seed, Scenario: sim.ScenarioDemo, Speed: fmSpeed,
		IdleTimeout: fmIdle, LeakTimeout: fmLeakReap,
		// The matrix checks INACTIVE end to end, which needs the owner's
		// activity: the simulator's opt-in extension (docs/thrift.md).
		// Lenient handles: dbxtop reads the direct clients' operations
		// through handles rebuilt from statement ids, not the proxy.
		OwnerActivity: true, LenientHandles: true,
	}
	if c.after == 0 {
		opts.Faults = c.spec
	}
	var cur atomic.Pointer[sim.Server]
	s1 := startSimServer(t, opts)
	cur.Store(s1)
	th := model.Thresholds{InactivityWarn: fmWarn, ServerIdleTimeout: fmIdle, LeakAfter: fmLeakAfter}
	start := time.Now()
	rg := startRig(t, s1.URL(), token, rigOptions{Thresholds: th, Refresh: fmRefresh, RecordPolls: true})

	// Ground truth, sampled.
	tl := &truthLog{ops: map[string]*opHistory{}}
	sampStop, sampDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampDone)
		tick := time.NewTicker(fmSample)
		defer tick.Stop()
		for {
			// nil while the simulator restarts: a closed server's truth,
			// recorded after restartAt, would look like the new one's.
			if at, srv := time.Now(), cur.Load(); srv != nil {
				tl.record(at, srv.Truth())
			}
			select {
			case <-sampStop:
				return
			case <-tick.C:
			}
		}
	}()

	var (
		prevRequests, prevFaults int64
		restartAt                time.Time
		liveAtRestart            []string
		unknownAtRestart         []string
		faultsFrom               time.Time
	)
	wait := func(until time.Time) {
		tm := time.NewTimer(time.Until(until))
		defer tm.Stop()
		<-tm.C
	}
	if c.after > 0 {
		wait(start.Add(c.after))
		fs, err := sim.ParseFaults(c.spec)
		if err != nil {
			t.Fatalf("ParseFaults(%q): %v", c.spec, err)
		}
		s1.SetFaults(fs)
		faultsFrom = time.Now()
	}
	if c.restart {
		// At 30 %: what dbxtop believed live or open must be marked gone
		// (awaited after the run, below).
		wait(start.Add(dur * 30 / 100))
		// What dbxtop follows right now and believes still live or open;
		// apart, the ended operations whose openness it could not tell.
		for _, o := range rg.eng.Snapshot().Operations {
			switch {
			case o.Gone || o.State == model.StateClosed || (o.Open != nil && !*o.Open):
			case o.Open == nil && o.State.Terminal():
				unknownAtRestart = append(unknownAtRestart, o.StatementID)
			default:
				liveAtRestart = append(liveAtRestart, o.StatementID)
			}
		}
		addr := strings.TrimPrefix(s1.URL(), "http://")
		st := s1.Stats()
		prevRequests, prevFaults = sumRequests(st), sumFaults(st)
		tl.record(time.Now(), s1.Truth())
		cur.Store(nil)
		closeSim(t, s1)
		restartAt = time.Now()
		o2 := opts
		o2.Listen = addr
		s2 := startSimServer(t, o2)
		cur.Store(s2)
	}
	wait(start.Add(dur))
	end := time.Now()
	snap := rg.eng.Snapshot()
	health := rg.eng.Health()
	var afterRestart map[string]*model.OperationView
	checkedAt := end
	if c.restart {
		afterRestart = awaitGone(rg, liveAtRestart, unknownAtRestart)
		checkedAt = time.Now()
	}
	close(sampStop)
	<-sampDone
	rg.stop()
	final := cur.Load()
	st := final.Stats()
	closeSim(t, final)
	events := rg.eventsCopy()

	res := fmResult{c: c, dur: end.Sub(start), retries: health.Retries, giveUps: health.GiveUps,
		requests: prevRequests + sumRequests(st), faults: prevFaults + sumFaults(st), engineCalls: rg.calls.total()}

	// ---- no followed operation dropped -------------------------------------
	inSnap := map[string]*model.OperationView{}
	for _, o := range snap.Operations {
		inSnap[o.StatementID] = o
	}
	discovered := map[string]time.Time{}
	discMsg := map[string]string{}
	for _, ev := range events {
		if ev.Kind == model.EventDiscovered {
			discovered[ev.StatementID] = ev.At
			discMsg[ev.StatementID] = ev.Message
		}
	}
	res.followed = len(discovered)
	if res.followed == 0 && !c.blind {
		t.Errorf("dbxtop followed no operation in %s", dur)
	}
	for id, at := range discovered {
		if at.After(snap.GeneratedAt) {
			continue // discovered after the snapshot was taken
		}
		if _, ok := inSnap[id]; !ok {
			desc := "unknown to the simulator's truth"
			if h := tl.ops[id]; h != nil {
				desc = fmt.Sprintf("truth: %s %s open=%t", h.kind, h.last().State, h.last().Open)
			}
			t.Errorf("operation %s discovered at +%s (%q) is no longer in the snapshot (dropped); %s",
				id, discovered[id].Sub(start).Round(10*time.Millisecond), discMsg[id], desc)
		}
	}
	// Never called gone while the server still holds it open.
	for _, o := range snap.Operations {
		if o.Gone {
			res.gone++
			h := tl.ops[o.StatementID]
			if h != nil && h.lastSeen.After(end.Add(-2*time.Second)) && h.last().Open && h.last().State != "CLOSED" {
				var trail []string
				for _, ev := range events {
					if ev.StatementID == o.StatementID && ev.Kind != model.EventFlagRaised && ev.Kind != model.EventFlagCleared {
						trail = append(trail, fmt.Sprintf("+%s %s %s", ev.At.Sub(start).Round(10*time.Millisecond), ev.Kind, ev.Message))
					}
				}
				t.Errorf("operation %s (%s) marked gone but the simulator still holds it open (%s); last error %v; events:\n  %s",
					o.StatementID, h.kind, h.last().State, o.LastError, strings.Join(trail, "\n  "))
			}
		}
	}
	if c.restart {
		if len(liveAtRestart) == 0 {
			t.Errorf("restart: dbxtop followed no live or open operation at the restart; nothing was tested")
		}
		describe := func(id string, o *model.OperationView) string {
			kind := "unknown to the truth"
			if h := tl.ops[id]; h != nil {
				kind = fmt.Sprintf("%s, last %s open=%t", h.kind, h.last().State, h.last().Open)
			}
			return fmt.Sprintf("%s (%s; warehouse %s; state %s, source %q, note %q, polls ok %d failed %d, last error %v)",
				id, kind, o.WarehouseID, o.State, o.StatusSource, o.StatusNote, o.Poll.OK, o.Poll.Failed, o.LastError)
		}
		for _, id := range liveAtRestart {
			o, ok := afterRestart[id]
			switch {
			case !ok:
				t.Errorf("restart: %s (open before the restart) dropped from the snapshot", id)
			case !o.Gone:
				t.Errorf("restart: %s vanished with the old simulator but is not marked gone %s after the restart: %s",
					id, time.Since(restartAt).Round(time.Second), describe(id, o))
			}
		}
		// An ended operation whose openness no source could tell before
		// the restart (on a stopped warehouse: no Thrift, the Statement
		// Execution API's 404 and query history's silence say nothing) is
		// not required to be marked gone: dbxtop cannot know it vanished.
		// It must stay ended and never be shown open.
		for _, id := range unknownAtRestart {
			o, ok := afterRestart[id]
			switch {
			case !ok:
				t.Errorf("restart: %s (ended, openness unknown before the restart) dropped from the snapshot", id)
			case !o.State.Terminal() || (o.Open != nil && *o.Open) || o.HasFlag(model.FlagUnclosed):
				t.Errorf("restart: %s, ended with its openness unknown before the restart, is shown live or open after it: %s",
					id, describe(id, o))
			}
		}
		unknownGone := 0
		for _, id := range unknownAtRestart {
			if o := afterRestart[id]; o != nil && o.Gone {
				unknownGone++
			}
		}
		t.Logf("restart: %d live or open at the restart, checked %s after it (the run ended %s after it); %d ended with openness unknown, %d of them marked gone",
			len(liveAtRestart), checkedAt.Sub(restartAt).Round(100*time.Millisecond), end.Sub(restartAt).Round(100*time.Millisecond), len(unknownAtRestart), unknownGone)
		newOps := 0
		for id, at := range discovered {
			if at.After(restartAt) && tl.ops[id] != nil {
				newOps++
			}
		}
		if newOps == 0 {
			t.Errorf("restart: dbxtop discovered nothing on the restarted simulator")
		}
	}

	// ---- flags: first raise per (operation, kind) ---------------------------
	type raise struct {
		at  time.Time
		sev model.Severity
	}
	raised := map[string]map[model.FlagKind]raise{}
	staleSpans := map[string][][2]time.Time{} // STALE raised → cleared
	for _, ev := range events {
		if ev.StatementID == "" || ev.Flag == nil {
			continue
		}
		switch ev.Kind {
		case model.EventFlagRaised:
			m := raised[ev.StatementID]
			if m == nil {
				m = map[model.FlagKind]raise{}
				raised[ev.StatementID] = m
			}
			if _, ok := m[ev.Flag.Kind]; !ok {
				m[ev.Flag.Kind] = raise{at: ev.At, sev: ev.Flag.Severity}
			}
			if ev.Flag.Kind == model.FlagStale {
				sp := staleSpans[ev.StatementID]
				if len(sp) == 0 || !sp[len(sp)-1][1].IsZero() {
					staleSpans[ev.StatementID] = append(sp, [2]time.Time{ev.At, {}})
				}
			}
		case model.EventFlagCleared:
			if ev.Flag.Kind == model.FlagStale {
				if sp := staleSpans[ev.StatementID]; len(sp) > 0 && sp[len(sp)-1][1].IsZero() {
					sp[len(sp)-1][1] = ev.At
				}
			}
		}
	}

	// ---- precision: flags on healthy operations must be supported by truth --
	for id, m := range raised {
		h := tl.ops[id]
		for kind, r := range m {
			if kind == model.FlagStale {
				res.stale++
				if h != nil && h.kind == sim.KindHealthy {
					res.staleHealthy++
				}
				continue
			}
			res.raised++
			if h == nil {
				continue // not in truth: an operation of the old simulator forgotten before sampling
			}
			if h.kind != sim.KindHealthy {
				continue
			}
			// What could dbxtop see? Its last successful poll of the
			// operation at or before the flag.
			p, polled := rg.polls.lastOK(id, r.at)
			if kind == model.FlagInactive || kind == model.FlagUnclosed {
				if !polled {
					res.blind++
					continue
				}
				// Judged as of that poll (its own answer, or the truth
				// sampled from its sending, less the sampling slop, to its
				// answer): a later change could not be in what it reported.
				if healthyFlagFalse(kind, r.at, h) != "" && (answerSupports(kind, r.at, p) ||
					healthyFlagFalseAsOf(kind, r.at, p.sent.Add(-fmSampleSlop), h) == "" || healthyFlagFalseAsOf(kind, r.at, p.at, h) == "") {
					// True as of dbxtop's last good poll; what changed after
					// it dbxtop could not see (its polls were failing).
					// Counted, not judged.
					res.blind++
					continue
				}
			}
			why := healthyFlagFalse(kind, r.at, h)
			if why != "" {
				res.falsePos++
				seen := "never polled ok"
				if polled {
					act := "unknown"
					if p.activity != nil {
						act = "+" + p.activity.Sub(start).Round(10*time.Millisecond).String()
					}
					open := "?"
					if p.open != nil {
						open = fmt.Sprint(*p.open)
					}
					seen = fmt.Sprintf("last ok poll sent at +%s, answered +%s: %s open=%s owner activity %s; truth then: %s",
						p.sent.Sub(start).Round(10*time.Millisecond), p.at.Sub(start).Round(10*time.Millisecond), p.state, open, act, truthAt(h, p.sent, start))
					for _, ev := range events {
						if ev.StatementID == id && ev.Kind == model.EventGiveUp && ev.At.After(p.at) && !ev.At.After(r.at) {
							seen += "; then give-up: " + ev.Message
						}
					}
				}
				t.Errorf("false %s (%s) at +%s on healthy operation %s: %s (%s)",
					kind, r.sev, r.at.Sub(start).Round(10*time.Millisecond), id, why, seen)
			}
		}
	}

	// ---- recall: abandons and close_fails flagged before the reaper ---------
	for id, h := range tl.ops {
		runEnd := end
		if c.restart && h.lastSeen.Before(restartAt) {
			runEnd = h.lastSeen // vanished with the first simulator
		}
		if !faultsFrom.IsZero() && c.blind {
			if faultsFrom.Before(runEnd) {
				runEnd = faultsFrom // blind from then on
			}
		}
		switch h.kind {
		case sim.KindAbandons:
			lastAct := h.last().OwnerLastActivity
			if lastAct.IsZero() || lastAct.Add(fmWarn+fmGrace).After(runEnd) {
				continue // not idle long enough, within the run, to be due
			}
			res.abandonsExp++
			reapAt := lastAct.Add(fmIdle)
			r, ok := raised[id][model.FlagInactive]
			if !ok {
				r, ok = raised[id][model.FlagReaped]
			}
			switch {
			case !ok:
				t.Errorf("recall: abandoned operation %s (owner idle since +%s) never flagged INACTIVE/REAPED",
					id, lastAct.Sub(start).Round(10*time.Millisecond))
			case r.at.After(reapAt.Add(fmSampleSlop)):
				t.Errorf("recall: abandoned operation %s flagged at +%s, after the reaper was due at +%s",
					id, r.at.Sub(start).Round(10*time.Millisecond), reapAt.Sub(start).Round(10*time.Millisecond))
			default:
				res.abandOK++
			}
		case sim.KindCloseFails:
			if h.terminalAt.IsZero() {
				continue
			}
			if o, ok := h.at(h.terminalAt.Add(fmLeakAfter)); !ok || !o.Open {
				continue // closed after all (by the reaper or the client)
			}
			if h.terminalAt.Add(fmLeakAfter + fmGrace).After(runEnd) {
				continue
			}
			res.closeExp++
			reapAt := h.terminalAt.Add(fmLeakReap)
			r, ok := raised[id][model.FlagUnclosed]
			switch {
			case !ok:
				t.Errorf("recall: leaked operation %s (terminal since +%s) never flagged UNCLOSED",
					id, h.terminalAt.Sub(start).Round(10*time.Millisecond))
			case r.at.After(reapAt):
				t.Errorf("recall: leaked operation %s flagged UNCLOSED at +%s, after the leak reaper was due at +%s",
					id, r.at.Sub(start).Round(10*time.Millisecond), reapAt.Sub(start).Round(10*time.Millisecond))
			default:
				res.closeOK++
			}
		}
	}
	if !c.blind && !c.restart && res.abandonsExp+res.closeExp == 0 {
		// Faults also hit the simulated clients, so a case may lose the
		// few abandons/close_fails statements of a short run (the stale
		// case does about half the time: its poisoned connections fail
		// the abandoning clients' own statements). Said here; the matrix
		// as a whole must still have exercised recall (TestFaultMatrix).
		t.Logf("the run expected no abandoned or leaked operation to be flagged: recall not exercised in this case")
	}

	// ---- every give-up carries its cause ------------------------------------
	for _, ev := range events {
		if ev.Kind != model.EventGiveUp {
			continue
		}
		if ev.Err == nil || ev.Err.Call == "" || ev.Err.Message == "" || ev.Err.Attempts < 1 {
			t.Errorf("give-up without its cause: %+v (err %+v)", ev, ev.Err)
			continue
		}
		if !strings.Contains(ev.Message, ev.Err.Call) || !strings.Contains(ev.Message, " attempt") {
			t.Errorf("give-up text does not name the call and attempts: %q", ev.Message)
		}
		if strings.Contains(ev.Message, token) {
			t.Errorf("give-up text carries the token: %q", ev.Message)
		}
		if res.errorSample == "" || (c.blind && ev.Err.ErrorCode != "") {
			res.errorSample = ev.Message
		}
		if c.blind && ev.At.After(faultsFrom.Add(time.Second)) {
			// Blind: every call is refused RESOURCE_EXHAUSTED; the error must
			// say so, with the request id the server gave.
			if ev.Err.ErrorCode != "RESOURCE_EXHAUSTED" || ev.Err.RequestID == "" || ev.Err.HTTPStatus != 429 {
				t.Errorf("quota: give-up should say HTTP 429 RESOURCE_EXHAUSTED with a request id: %+v (%s)", *ev.Err, ev.Message)
			}
		}
	}
	if c.blind {
		if !hasWSError(snap, "RESOURCE_EXHAUSTED") {
			t.Errorf("quota: the snapshot's errors do not say RESOURCE_EXHAUSTED with a request id: %+v", snap.Errors)
		}
		if health.LastError == nil || health.LastError.ErrorCode != "RESOURCE_EXHAUSTED" || health.LastError.RequestID == "" {
			t.Errorf("quota: poller health's last error = %+v; want RESOURCE_EXHAUSTED with a request id", health.LastError)
		}
	}
	if c.spec != "" && res.faults == 0 {
		t.Errorf("faults %q: the simulator injected none", c.spec)
	}
	t.Logf("%s: %s followed=%d abandons %d/%d close_fails %d/%d raised=%d false=%d blind=%d stale=%d (healthy %d) gone=%d retries=%d give-ups=%d requests=%d faults=%d dbxtop-calls=%d",
		c.name, res.dur.Round(time.Second), res.followed, res.abandOK, res.abandonsExp, res.closeOK, res.closeExp,
		res.raised, res.falsePos, res.blind, res.stale, res.staleHealthy, res.gone, res.retries, res.giveUps, res.requests, res.faults, res.engineCalls)
	if res.errorSample != "" {
		t.Logf("%s: a give-up: %s", c.name, res.errorSample)
	}
	return res
}

// healthyFlagFalse says why a flag raised at t on a healthy operation is
// not supported by the ground truth ("" when it is). The simulator's
// healthy clients meet the injected faults too: one that gave up polling
// and could not close is a real orphan, and flagging it is right.
func healthyFlagFalse(kind model.FlagKind, t time.Time, h *opHistory) string {
	return healthyFlagFalseAsOf(kind, t, t, h)
}

// healthyFlagFalseAsOf judges a flag raised at t against the truth as it
// was at asOf (dbxtop's last successful poll).
func healthyFlagFalseAsOf(kind model.FlagKind, t, asOf time.Time, h *opHistory) string {
	o, ok := h.at(asOf)
	if !ok {
		return "the simulator did not list it yet"
	}
	switch kind {
	case model.FlagInactive:
		// Supported when the owner had been idle for the warning threshold
		// (less the sampling slop) at t.
		if idle := t.Sub(o.OwnerLastActivity); idle < fmWarn-fmSampleSlop {
			return fmt.Sprintf("its owner's last call was %s before (threshold %s)", idle.Round(10*time.Millisecond), fmWarn)
		}
	case model.FlagUnclosed:
		if !o.Open || o.State == "CLOSED" || o.State == "RUNNING" || o.State == "PENDING" {
			return fmt.Sprintf("the simulator has it %s, open=%t", o.State, o.Open)
		}
	case model.FlagReaped:
		if !h.everReaped() {
			return "the simulator never reaped it"
		}
	case model.FlagCloseFailed:
		return "dbxtop never closes an operation nobody adopted"
	}
	return ""
}

func hasWSError(s model.Snapshot, code string) bool {
	for _, e := range s.Errors {
		if e.ErrorCode == code && e.RequestID != "" {
			return true
		}
	}
	return false
}

func fmTable(rs []fmResult, dur time.Duration) string {
	var b strings.Builder
	b.WriteString("| fault | rate | duration | operations followed | abandons flagged / expected | close_fails flagged / expected | flags raised (false) | raised while blind | STALE (on healthy) | gone | retries | give-ups | requests (sim) | faults injected | dbxtop calls |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d / %d | %d / %d | %d (%d) | %d | %d (%d) | %d | %d | %d | %d | %d | %d |\n",
			r.c.name, r.c.rate, r.dur.Round(time.Second), r.followed, r.abandOK, r.abandonsExp, r.closeOK, r.closeExp,
			r.raised, r.falsePos, r.blind, r.stale, r.staleHealthy, r.gone, r.retries, r.giveUps, r.requests, r.faults, r.engineCalls)
	}
	_ = dur
	return b.String()
}

// TestRESTHostNoRace is the regression test of a data race that was in
// sources/databricks: Client.Host() called the SDK's
// Config.CanonicalHostName, which rewrites Config.Host, for every API
// error, so two calls of one client failing at the same time raced. The
// canonical host is now resolved once in databricks.New; under -race (CI)
// this test fails if that comes back.
func TestRESTHostNoRace(t *testing.T) {
	budget(t)
	// Every call answers 503: discovery and capacity fail at once, as
	// they did in the fault matrix under -race.
	s := startSimServer(t, sim.Options{Scenario: sim.ScenarioQuiet, Faults: "unavailable=1"})
	c, err := databricks.New(context.Background(), databricks.Config{Host: s.URL(), Token: s.Token()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := c.Discover(context.Background(), nil); err == nil {
			t.Errorf("Discover under unavailable=1: want an error")
		}
	}()
	go func() {
		defer wg.Done()
		if _, err := c.Endpoints(context.Background(), nil); err == nil {
			t.Errorf("Endpoints under unavailable=1: want an error")
		}
	}()
	wg.Wait()
}

func truthAt(h *opHistory, t, start time.Time) string {
	o, ok := h.at(t)
	if !ok {
		return "not listed"
	}
	return fmt.Sprintf("%s open=%t owner activity +%s", o.State, o.Open, o.OwnerLastActivity.Sub(start).Round(10*time.Millisecond))
}

// answerSupports: the last successful poll's own answer (the simulator's
// state at that moment) already justified the flag raised at t.
func answerSupports(kind model.FlagKind, t time.Time, p okPoll) bool {
	switch kind {
	case model.FlagInactive:
		return p.activity != nil && t.Sub(*p.activity) >= fmWarn-fmSampleSlop
	case model.FlagUnclosed:
		return p.state.Terminal() && p.state != model.StateClosed && p.open != nil && *p.open
	}
	return false
}

// fmAwaitGone bounds how long after the run the restart case waits for
// what dbxtop followed as live or open to be marked gone. A terminal
// operation is polled every 10 s, and a poll can be lost to the restart
// itself and to the new simulator's scripted observer outage: awaited
// rather than read at a fixed time, so a slow machine costs time, not a
// false failure.
const fmAwaitGone = 45 * time.Second

// awaitGone waits until every operation of live is marked gone (or
// fmAwaitGone passes) and returns the operations of live and unknown as
// the engine then shows them.
func awaitGone(rg *rig, live, unknown []string) map[string]*model.OperationView {
	deadline := time.Now().Add(fmAwaitGone)
	for {
		out := map[string]*model.OperationView{}
		for _, o := range rg.eng.Snapshot().Operations {
			out[o.StatementID] = o
		}
		pending := 0
		for _, id := range live {
			if o, ok := out[id]; ok && !o.Gone {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			for id := range out {
				if !slices.Contains(live, id) && !slices.Contains(unknown, id) {
					delete(out, id)
				}
			}
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}
