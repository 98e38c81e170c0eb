package model

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const ms = time.Millisecond

func boolp(b bool) *bool { return &b }

// flagOf returns the flag of kind k, or the zero Flag.
func flagOf(flags []Flag, k FlagKind) Flag {
	for _, f := range flags {
		if f.Kind == k {
			return f
		}
	}
	return Flag{}
}

type sevCase struct {
	name string
	d    time.Duration
	want Severity
}

// Thresholds at their defaults: warn 60s, idle timeout 430s (critical at
// 344s), leak-after 2m (critical at 10m).
var idleBoundaries = []sevCase{
	{"zero", 0, SeverityNone},
	{"just below warn", 60*time.Second - ms, SeverityNone},
	{"at warn", 60 * time.Second, SeverityWarning},
	{"just above warn", 60*time.Second + ms, SeverityWarning},
	{"just below 80% of idle timeout", 344*time.Second - ms, SeverityWarning},
	{"at 80% of idle timeout", 344 * time.Second, SeverityCritical},
	{"just above 80% of idle timeout", 344*time.Second + ms, SeverityCritical},
	{"past the idle timeout", time.Hour, SeverityCritical},
}

func TestInactiveBoundaries(t *testing.T) {
	for _, st := range []State{StatePending, StateRunning, StateUnknown} {
		for _, c := range idleBoundaries {
			op := Operation{State: st, ClientActivityKnown: true, ClientLastActivity: t0.Add(-c.d)}
			got := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagInactive)
			if got.Severity != c.want {
				t.Errorf("%s %s: INACTIVE severity %q, want %q", st, c.name, got.Severity, c.want)
			}
		}
	}
}

func TestInactiveDetailCountsDownToReaper(t *testing.T) {
	op := Operation{State: StateRunning, ClientActivityKnown: true, ClientLastActivity: t0.Add(-72 * time.Second)}
	f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagInactive)
	if want := "no client call for 1m12s; server reaps in 5m58s"; f.Detail != want {
		t.Errorf("detail %q, want %q", f.Detail, want)
	}
	op.ClientLastActivity = t0.Add(-500 * time.Second)
	f = flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagInactive)
	if !strings.Contains(f.Detail, "reaper due now") {
		t.Errorf("overdue detail %q does not say the reaper is due", f.Detail)
	}
}

func TestInactiveNeverWhenUnknownOrTerminal(t *testing.T) {
	cases := []Operation{
		{State: StateRunning, ClientActivityKnown: false, ClientLastActivity: t0.Add(-time.Hour)},
		{State: StateRunning, ClientActivityKnown: true}, // known but no time: unknown
		{State: StateFinished, ClientActivityKnown: true, ClientLastActivity: t0.Add(-time.Hour)},
		{State: StateFailed, ClientActivityKnown: true, ClientLastActivity: t0.Add(-time.Hour)},
		{State: StateCanceled, ClientActivityKnown: true, ClientLastActivity: t0.Add(-time.Hour)},
		{State: StateClosed, ClientActivityKnown: true, ClientLastActivity: t0.Add(-time.Hour)},
		{State: StateRunning, ClientActivityKnown: true, ClientLastActivity: t0.Add(-time.Hour), Gone: true},
	}
	for i, op := range cases {
		if f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagInactive); f.Kind != "" {
			t.Errorf("case %d (%s known=%v): unexpected %+v", i, op.State, op.ClientActivityKnown, f)
		}
	}
}

// A warn threshold above 80 % of the idle timeout must not hide an
// imminent reap: the critical threshold raises the flag on its own.
func TestInactiveCriticalEvenAboveWarn(t *testing.T) {
	th := Thresholds{InactivityWarn: 400 * time.Second, ServerIdleTimeout: 430 * time.Second, LeakAfter: time.Minute}
	op := Operation{State: StateRunning, ClientActivityKnown: true, ClientLastActivity: t0.Add(-344 * time.Second)}
	if f := flagOf(EvaluateOperation(op, t0, th), FlagInactive); f.Severity != SeverityCritical {
		t.Errorf("got %+v, want critical", f)
	}
	op.ClientLastActivity = t0.Add(-344*time.Second + ms)
	if f := flagOf(EvaluateOperation(op, t0, th), FlagInactive); f.Kind != "" {
		t.Errorf("got %+v below both thresholds", f)
	}
}

func TestStaleBoundaries(t *testing.T) {
	for _, c := range idleBoundaries {
		op := Operation{State: StateRunning, FirstSeenAt: t0.Add(-2 * time.Hour), LastPollOKAt: t0.Add(-c.d)}
		got := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagStale)
		if got.Severity != c.want {
			t.Errorf("%s: STALE severity %q, want %q", c.name, got.Severity, c.want)
		}
		// Never polled ok: measured from FirstSeenAt.
		op = Operation{State: StatePending, FirstSeenAt: t0.Add(-c.d), Poll: PollStats{Failed: 3}}
		got = flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagStale)
		if got.Severity != c.want {
			t.Errorf("%s (never polled ok): STALE severity %q, want %q", c.name, got.Severity, c.want)
		}
	}
}

func TestStaleDetailAndExclusions(t *testing.T) {
	op := Operation{State: StateRunning, LastPollOKAt: t0.Add(-65 * time.Second),
		Poll:      PollStats{OK: 2, Failed: 4, Retries: 9},
		LastError: &ErrorInfo{Kind: KindTransport, Call: "GetOperationStatus", Message: "connection reset by peer", RequestID: "r-1"}}
	f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagStale)
	for _, want := range []string{"1m05s", "4 failed", "9 retries", "still polling", "GetOperationStatus", "r-1"} {
		if !strings.Contains(f.Detail, want) {
			t.Errorf("STALE detail %q lacks %q", f.Detail, want)
		}
	}
	for i, op := range []Operation{
		{State: StateRunning}, // nothing to measure from
		{State: StateFinished, LastPollOKAt: t0.Add(-time.Hour)},
		{State: StateRunning, LastPollOKAt: t0.Add(-time.Hour), Gone: true},
		{State: StateRunning, LastPollOKAt: t0.Add(time.Hour)}, // clock skew
	} {
		if f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagStale); f.Kind != "" {
			t.Errorf("case %d: unexpected %+v", i, f)
		}
	}
}

func TestUnclosedBoundaries(t *testing.T) {
	cases := []sevCase{
		{"just below leak-after", 2*time.Minute - ms, SeverityNone},
		{"at leak-after", 2 * time.Minute, SeverityWarning},
		{"just above leak-after", 2*time.Minute + ms, SeverityWarning},
		{"just below 5x", 10*time.Minute - ms, SeverityWarning},
		{"at 5x", 10 * time.Minute, SeverityCritical},
		{"just above 5x", 10*time.Minute + ms, SeverityCritical},
	}
	for _, st := range []State{StateFinished, StateFailed, StateCanceled} {
		for _, c := range cases {
			op := Operation{State: st, Open: boolp(true), CompletedAt: t0.Add(-c.d)}
			got := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagUnclosed)
			if got.Severity != c.want {
				t.Errorf("%s %s: UNCLOSED %q, want %q", st, c.name, got.Severity, c.want)
			}
		}
	}
	op := Operation{State: StateFinished, Open: boolp(true), CompletedAt: t0.Add(-3 * time.Minute)}
	if f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagUnclosed); f.Detail != "finished 3m00s ago and still open on the server" {
		t.Errorf("detail %q", f.Detail)
	}
}

func TestUnclosedExclusions(t *testing.T) {
	old := t0.Add(-time.Hour)
	for i, op := range []Operation{
		{State: StateFinished, Open: boolp(false), CompletedAt: old},
		{State: StateFinished, Open: nil, CompletedAt: old}, // unknown
		{State: StateFinished, Open: boolp(true)},           // completion time unknown
		{State: StateClosed, Open: boolp(true), CompletedAt: old},
		{State: StateRunning, Open: boolp(true), CompletedAt: old},
		{State: StateFinished, Open: boolp(true), CompletedAt: old, Gone: true},
	} {
		if f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagUnclosed); f.Kind != "" {
			t.Errorf("case %d: unexpected %+v", i, f)
		}
	}
}

func TestCloseFailed(t *testing.T) {
	for _, cs := range []CloseState{"", CloseNA, ClosePending, CloseClosed} {
		op := Operation{State: StateFinished, Close: CloseInfo{State: cs, Attempts: 1}}
		if f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagCloseFailed); f.Kind != "" {
			t.Errorf("close state %q: unexpected %+v", cs, f)
		}
	}
	op := Operation{State: StateFinished, Close: CloseInfo{State: CloseFailed, Attempts: 3, NextTry: t0.Add(4 * time.Second),
		LastError: &ErrorInfo{Kind: KindTransport, Call: "CloseOperation", Message: "EOF", RequestID: "req-9", Attempts: 3}}}
	f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagCloseFailed)
	if f.Severity != SeverityCritical {
		t.Fatalf("CLOSE_FAILED severity %q, want critical", f.Severity)
	}
	for _, want := range []string{"3 attempt", "CloseOperation", "EOF", "req-9", "retry in 4s"} {
		if !strings.Contains(f.Detail, want) {
			t.Errorf("detail %q lacks %q", f.Detail, want)
		}
	}
}

func TestReaped(t *testing.T) {
	cases := []struct {
		state State
		msg   string
		want  bool
	}{
		{StateFailed, "Query has been timed out due to inactivity.", true},
		{StateFailed, "[ERROR] QUERY HAS BEEN TIMED OUT DUE TO INACTIVITY", true},
		{StateFailed, "Query timed out after 10s", false},
		{StateFailed, "", false},
		{StateFinished, "Query has been timed out due to inactivity.", false},
		{StateCanceled, "Query has been timed out due to inactivity.", false},
	}
	for _, c := range cases {
		op := Operation{State: c.state, ServerError: c.msg}
		f := flagOf(EvaluateOperation(op, t0, DefaultThresholds), FlagReaped)
		if (f.Kind != "") != c.want {
			t.Errorf("%s %q: REAPED raised=%v, want %v", c.state, c.msg, f.Kind != "", c.want)
		}
		if c.want && f.Severity != SeverityWarning {
			t.Errorf("REAPED severity %q, want warning", f.Severity)
		}
	}
}

func TestInactiveForAndReapedIn(t *testing.T) {
	op := Operation{State: StateRunning}
	if InactiveFor(op, t0) != nil || ReapedIn(op, t0, DefaultThresholds) != nil {
		t.Error("unknown activity must give nil figures")
	}
	op.ClientActivityKnown, op.ClientLastActivity = true, t0.Add(-100*time.Second)
	if d := InactiveFor(op, t0); d == nil || *d != 100*time.Second {
		t.Errorf("InactiveFor = %v", d)
	}
	if d := ReapedIn(op, t0, DefaultThresholds); d == nil || *d != 330*time.Second {
		t.Errorf("ReapedIn = %v, want 330s", d)
	}
	op.ClientLastActivity = t0.Add(-431 * time.Second)
	if d := ReapedIn(op, t0, DefaultThresholds); d == nil || *d != 0 {
		t.Errorf("ReapedIn past the timeout = %v, want 0", d)
	}
	op.ClientLastActivity = t0.Add(time.Minute) // skew
	if d := InactiveFor(op, t0); d == nil || *d != 0 {
		t.Errorf("InactiveFor with skew = %v, want 0", d)
	}
	op.State = StateFinished
	if ReapedIn(op, t0, DefaultThresholds) != nil {
		t.Error("a terminal operation has no reaper countdown")
	}
}

func TestZeroThresholdsAreDefaults(t *testing.T) {
	op := Operation{State: StateRunning, ClientActivityKnown: true, ClientLastActivity: t0.Add(-59 * time.Second)}
	if len(EvaluateOperation(op, t0, Thresholds{})) != 0 {
		t.Error("zero thresholds must behave as the defaults (warn at 60s)")
	}
	op.ClientLastActivity = t0.Add(-60 * time.Second)
	if flagOf(EvaluateOperation(op, t0, Thresholds{}), FlagInactive).Severity != SeverityWarning {
		t.Error("zero thresholds: no warning at 60s")
	}
}

func TestFlagOrderAndCombination(t *testing.T) {
	op := Operation{State: StateFailed, Open: boolp(true), CompletedAt: t0.Add(-11 * time.Minute),
		ServerError: "Query has been timed out due to inactivity.", Close: CloseInfo{State: CloseFailed, Attempts: 1}}
	flags := EvaluateOperation(op, t0, DefaultThresholds)
	var kinds []FlagKind
	for _, f := range flags {
		kinds = append(kinds, f.Kind)
	}
	want := []FlagKind{FlagUnclosed, FlagCloseFailed, FlagReaped}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds %v, want %v", kinds, want)
		}
	}
	if MaxSeverity(flags) != SeverityCritical {
		t.Errorf("max severity %q", MaxSeverity(flags))
	}
}

func TestReapedInNilWhenGone(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	op := Operation{State: StateRunning, ClientActivityKnown: true, ClientLastActivity: now.Add(-10 * time.Second)}
	if ReapedIn(op, now, DefaultThresholds) == nil {
		t.Fatal("a live operation with known activity must have a countdown")
	}
	op.Gone = true
	if d := ReapedIn(op, now, DefaultThresholds); d != nil {
		t.Fatalf("a gone operation has no reaper countdown, got %v", *d)
	}
}

func TestFlagsOnOldEvidenceSayHowOld(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	open := true
	op := Operation{State: StateRunning, ClientActivityKnown: true,
		ClientLastActivity: now.Add(-90 * time.Second), LastPollOKAt: now.Add(-2 * time.Second), FirstSeenAt: now.Add(-5 * time.Minute)}
	f := EvaluateOperation(op, now, DefaultThresholds)
	if len(f) != 1 || f[0].Kind != FlagInactive || strings.Contains(f[0].Detail, "unverified") {
		t.Fatalf("fresh evidence: %+v", f)
	}
	op.LastPollOKAt = now.Add(-75 * time.Second) // blind for longer than --inactivity-warn
	op.LastError = &ErrorInfo{Kind: KindTransport, Call: "GetOperationStatus", Message: "connection reset"}
	f = EvaluateOperation(op, now, DefaultThresholds)
	if len(f) != 2 || f[0].Kind != FlagInactive || !strings.Contains(f[0].Detail, "unverified since") || !strings.Contains(f[0].Detail, "1m15s ago") {
		t.Fatalf("old evidence: %+v", f)
	}
	done := Operation{State: StateFinished, Open: &open, CompletedAt: now.Add(-3 * time.Minute), LastPollOKAt: now.Add(-90 * time.Second)}
	f = EvaluateOperation(done, now, DefaultThresholds)
	if len(f) != 1 || f[0].Kind != FlagUnclosed || strings.Contains(f[0].Detail, "unverified") {
		t.Fatalf("unclosed, no longer polled on purpose, is not unverified: %+v", f)
	}
	done.LastError = op.LastError
	f = EvaluateOperation(done, now, DefaultThresholds)
	if len(f) != 1 || f[0].Kind != FlagUnclosed || !strings.Contains(f[0].Detail, "unverified since") {
		t.Fatalf("unclosed on old evidence while polls fail: %+v", f)
	}
}
