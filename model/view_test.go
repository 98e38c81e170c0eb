package model

import (
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// genViewOp is an operation in the shapes the flag rules distinguish,
// with times near t0 so that deadlines fall inside the test's window.
func genViewOp(t *rapid.T) Operation {
	near := func(label string) time.Time {
		if rapid.IntRange(0, 4).Draw(t, label+"_zero") == 0 {
			return time.Time{}
		}
		return t0.Add(-time.Duration(rapid.Int64Range(-int64(time.Minute), int64(2*time.Hour)).Draw(t, label)))
	}
	var open *bool
	if rapid.Bool().Draw(t, "open_known") {
		b := rapid.Bool().Draw(t, "open")
		open = &b
	}
	op := Operation{
		StatementID: "01f0", User: rapid.SampledFrom([]string{"ana", "José", "evil\x1b]0;x\x07"}).Draw(t, "user"),
		State:     rapid.SampledFrom([]State{StatePending, StateRunning, StateFinished, StateFailed, StateCanceled, StateClosed, StateUnknown, ""}).Draw(t, "state"),
		StartedAt: near("started"), CompletedAt: near("completed"), FirstSeenAt: near("first"), LastPollOKAt: near("pollok"),
		ServerError: rapid.SampledFrom([]string{"", "Query has been timed out due to inactivity."}).Draw(t, "srverr"),
		Open:        open, Gone: rapid.Bool().Draw(t, "gone"),
		Close: CloseInfo{State: rapid.SampledFrom([]CloseState{"", CloseNA, ClosePending, CloseClosed, CloseFailed}).Draw(t, "cs")},
	}
	if rapid.Bool().Draw(t, "activity") {
		op.ClientActivityKnown, op.ClientLastActivity = true, near("last")
	}
	if rapid.Bool().Draw(t, "err") {
		op.LastError = &ErrorInfo{Kind: KindTransport, Call: "GetOperationStatus", Message: "connection reset"}
	}
	if rapid.Bool().Draw(t, "proxy") {
		op.Proxy = &ProxyAccount{CloseOutcome: rapid.SampledFrom([]string{ProxyCloseFailed, ""}).Draw(t, "pco")}
	}
	return op
}

// A cached view is handed out again only while it is exactly what a fresh
// evaluation gives: at every instant of its validity, EvaluateView of the
// same operation equals it, and the first instant after is re-evaluated.
func TestViewCacheExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		th := Thresholds{
			InactivityWarn:    time.Duration(rapid.Int64Range(1, int64(10*time.Minute)).Draw(t, "warn")),
			ServerIdleTimeout: time.Duration(rapid.Int64Range(1, int64(20*time.Minute)).Draw(t, "idle")),
			LeakAfter:         time.Duration(rapid.Int64Range(1, int64(10*time.Minute)).Draw(t, "leak")),
		}
		op := genViewOp(t)
		var c ViewCache
		now := t0
		for step := range 6 {
			v, changed := c.View(&op, now, th)
			if step == 0 && !changed {
				t.Fatal("the first view is not reported as new")
			}
			if want := EvaluateView(op, now, th); !reflect.DeepEqual(*v, *want) {
				t.Fatalf("step %d at %v: cached view differs from a fresh one\n got %+v\nwant %+v", step, now.Sub(t0), *v, *want)
			}
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(3*time.Minute)).Draw(t, "advance")))
		}
	})
}

// The cache reuses: an operation with nothing running (no flag, activity
// unknown) keeps its one view across refreshes until its deadline, and a
// change of the operation builds a new one.
func TestViewCacheReusesUntilDeadline(t *testing.T) {
	th := Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 10 * time.Minute, LeakAfter: 2 * time.Minute}
	op := Operation{StatementID: "a", State: StateRunning, FirstSeenAt: t0, LastPollOKAt: t0}
	var c ViewCache
	v0, _ := c.View(&op, t0, th)
	for s := 1; s < 60; s++ {
		if v, changed := c.View(&op, t0.Add(time.Duration(s)*time.Second), th); changed || v != v0 {
			t.Fatalf("re-evaluated at +%ds with nothing due", s)
		}
	}
	if v, changed := c.View(&op, t0.Add(time.Minute), th); !changed || !v.HasFlag(FlagStale) {
		t.Fatalf("at the STALE deadline: changed %v, flags %v", changed, v.Flags)
	}
	op.LastPollOKAt = t0.Add(time.Minute)
	if v, changed := c.View(&op, t0.Add(time.Minute), th); !changed || v.HasFlag(FlagStale) {
		t.Fatalf("after a confirmation: changed %v, flags %v", changed, v.Flags)
	}
}

// Views of an unchanged operation share one cleaned copy of it: a view
// re-evaluated only because time passed (its running figures) points at
// the copy the previous view holds, and nothing writes to it: not the
// caller changing its own operation, not Merge naming a workspace.
func TestViewsOfAnUnchangedOperationShareIt(t *testing.T) {
	th := Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 10 * time.Minute, LeakAfter: 2 * time.Minute}
	op := Operation{StatementID: "a", User: "ana", State: StateRunning, FirstSeenAt: t0, LastPollOKAt: t0,
		ClientActivityKnown: true, ClientLastActivity: t0.Add(-2 * time.Minute)}
	var c ViewCache
	v0, _ := c.View(&op, t0, th)
	v1, changed := c.View(&op, t0.Add(time.Second), th)
	if !changed || v1 == v0 {
		t.Fatal("a view with a running figure was not re-evaluated a second later")
	}
	if v1.Operation != v0.Operation {
		t.Error("the re-evaluated view copied the unchanged operation instead of sharing it")
	}
	v2 := c.Aged(t0.Add(2*time.Second), th)
	if v2 == v1 || v2.Operation != v0.Operation {
		t.Errorf("Aged: new view %v, shares the copy %v; want true, true", v2 != v1, v2.Operation == v0.Operation)
	}
	if *v0.InactiveFor != 2*time.Minute || *v2.InactiveFor != 2*time.Minute+2*time.Second {
		t.Errorf("inactive for %v then %v; want 2m0s then 2m2s", *v0.InactiveFor, *v2.InactiveFor)
	}

	op.LastPollOKAt = t0.Add(3 * time.Second) // the caller's operation changes
	v3, changed := c.View(&op, t0.Add(3*time.Second), th)
	if !changed || v3.Operation == v0.Operation || v0.LastPollOKAt != t0 {
		t.Errorf("after a change: new view %v, own copy %v, old copy kept %v", changed, v3.Operation != v0.Operation, v0.LastPollOKAt == t0)
	}

	parts := []NamedSnapshot{{Name: "w1", Snapshot: Snapshot{Operations: []*OperationView{v3}}}, {Name: "w2"}}
	m := Merge(parts)
	if got := m.Operations[0].Workspace; got != "w1" || v3.Workspace != "" {
		t.Errorf("Merge: merged view's workspace %q, the shared view's %q; want w1 and empty", got, v3.Workspace)
	}
}
