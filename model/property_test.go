package model

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Severity never decreases as a client's inactivity grows, whatever the
// thresholds and the rest of the operation.
func TestPropertyInactivitySeverityMonotonic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		th := genThresholds(t)
		st := rapid.SampledFrom([]State{StatePending, StateRunning, StateUnknown, StateFinished}).Draw(t, "state")
		d1 := time.Duration(rapid.Int64Range(0, int64(2*time.Hour)).Draw(t, "d1"))
		d2 := d1 + time.Duration(rapid.Int64Range(0, int64(2*time.Hour)).Draw(t, "grow"))
		op := Operation{State: st, ClientActivityKnown: true, FirstSeenAt: t0.Add(-3 * time.Hour), LastPollOKAt: t0}
		op.ClientLastActivity = t0.Add(-d1)
		s1 := MaxSeverity(EvaluateOperation(op, t0, th))
		op.ClientLastActivity = t0.Add(-d2)
		s2 := MaxSeverity(EvaluateOperation(op, t0, th))
		if s2.Rank() < s1.Rank() {
			t.Fatalf("severity fell from %q at %v to %q at %v (th %+v)", s1, d1, s2, d2, th)
		}
		// dbxtop's own silence (STALE) obeys the same rule.
		op = Operation{State: st, LastPollOKAt: t0.Add(-d1)}
		s1 = MaxSeverity(EvaluateOperation(op, t0, th))
		op.LastPollOKAt = t0.Add(-d2)
		s2 = MaxSeverity(EvaluateOperation(op, t0, th))
		if s2.Rank() < s1.Rank() {
			t.Fatalf("STALE severity fell from %q at %v to %q at %v (th %+v)", s1, d1, s2, d2, th)
		}
	})
}

// The reaper countdown and the inactivity always add up to the idle
// timeout until the countdown hits zero.
func TestPropertyReapedInComplementsInactivity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		th := genThresholds(t)
		d := time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "d"))
		op := Operation{State: StateRunning, ClientActivityKnown: true, ClientLastActivity: t0.Add(-d)}
		in, left := InactiveFor(op, t0), ReapedIn(op, t0, th)
		if *in != d || *left != max(th.ServerIdleTimeout-d, 0) {
			t.Fatalf("inactive %v left %v for d %v timeout %v", *in, *left, d, th.ServerIdleTimeout)
		}
	})
}

// Snapshot → JSON → Snapshot gives the same value, and JSON → Snapshot →
// JSON the same bytes, for a clean snapshot (as NewSnapshot builds them;
// decoding cleans whatever text is not).
func TestPropertySnapshotJSONRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := decoded(t, genSnapshot(t)) // clean, in model's order, as decoding leaves it
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Snapshot
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("decode own output: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the snapshot\n got %+v\nwant %+v", back, s)
		}
		b2, err := json.Marshal(back)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("re-encoding differs (%v)\n%s\n%s", err, b, b2)
		}
	})
}

// decoded is s as a peer's JSON decodes: cleaned and ordered.
func decoded(t *rapid.T, s Snapshot) Snapshot {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out Snapshot
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
	return out
}

func genThresholds(t *rapid.T) Thresholds {
	return Thresholds{
		InactivityWarn:    time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "warn")),
		ServerIdleTimeout: time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "idle")),
		LeakAfter:         time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "leak")),
	}
}

// genTime is zero (unknown) or a UTC instant with nanoseconds.
func genTime(t *rapid.T, label string) time.Time {
	if rapid.Bool().Draw(t, label+"_zero") {
		return time.Time{}
	}
	return time.Unix(0, rapid.Int64Range(0, 4e18).Draw(t, label)).UTC()
}

func genDurPtr(t *rapid.T, label string) *time.Duration {
	if rapid.Bool().Draw(t, label+"_nil") {
		return nil
	}
	d := time.Duration(rapid.Int64().Draw(t, label))
	return &d
}

func genError(t *rapid.T, label string) *ErrorInfo {
	if rapid.Bool().Draw(t, label+"_nil") {
		return nil
	}
	e := genErrorValue(t, label)
	return &e
}

func genErrorValue(t *rapid.T, label string) ErrorInfo {
	return ErrorInfo{
		Kind:       rapid.SampledFrom([]ErrorKind{KindTransport, KindThrottled, KindUnavailable, KindPermanent, KindCanceled}).Draw(t, label+"_kind"),
		Call:       rapid.String().Draw(t, label+"_call"),
		ErrorCode:  rapid.String().Draw(t, label+"_code"),
		HTTPStatus: rapid.IntRange(0, 599).Draw(t, label+"_status"),
		Message:    rapid.String().Draw(t, label+"_msg"),
		RequestID:  rapid.String().Draw(t, label+"_rid"),
		Attempts:   rapid.IntRange(0, 100).Draw(t, label+"_attempts"),
		Elapsed:    time.Duration(rapid.Int64().Draw(t, label+"_elapsed")),
	}
}

func genFlags(t *rapid.T, label string) []Flag {
	n := rapid.IntRange(0, 3).Draw(t, label+"_n")
	var out []Flag
	for i := 0; i < n; i++ {
		out = append(out, Flag{
			Kind:     rapid.SampledFrom([]FlagKind{FlagInactive, FlagStale, FlagUnclosed, FlagCloseFailed, FlagReaped, FlagCapacity, FlagExhausted}).Draw(t, label+"_kind"),
			Severity: rapid.SampledFrom([]Severity{SeverityWarning, SeverityCritical}).Draw(t, label+"_sev"),
			Detail:   rapid.String().Draw(t, label+"_detail"),
		})
	}
	return out
}

func genSnapshot(t *rapid.T) Snapshot {
	s := Snapshot{GeneratedAt: genTime(t, "gen"), Workspace: Workspace{Host: rapid.String().Draw(t, "host")}}
	s.Workspace.Warehouses = rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, "whs")
	if len(s.Workspace.Warehouses) == 0 {
		s.Workspace.Warehouses = nil
	}
	for i, n := 0, rapid.IntRange(0, 4).Draw(t, "nops"); i < n; i++ {
		var open *bool
		if !rapid.Bool().Draw(t, "open_nil") {
			b := rapid.Bool().Draw(t, "open")
			open = &b
		}
		last := genTime(t, "activity")
		op := Operation{
			StatementID: rapid.String().Draw(t, "id"), WarehouseID: rapid.String().Draw(t, "wh"),
			User: rapid.String().Draw(t, "user"), ClientApplication: rapid.String().Draw(t, "app"),
			SQL:       rapid.String().Draw(t, "sql"),
			State:     rapid.SampledFrom([]State{StatePending, StateRunning, StateFinished, StateFailed, StateCanceled, StateClosed, StateUnknown}).Draw(t, "state"),
			StartedAt: genTime(t, "started"), CompletedAt: genTime(t, "completed"),
			ServerError: rapid.String().Draw(t, "srverr"), ClientActivityKnown: !last.IsZero(), ClientLastActivity: last,
			Open: open, FirstSeenAt: genTime(t, "first"), LastPollOKAt: genTime(t, "pollok"),
			Poll: PollStats{OK: rapid.IntRange(0, 1e6).Draw(t, "ok"), Failed: rapid.IntRange(0, 1e6).Draw(t, "failed"), Retries: rapid.IntRange(0, 1e6).Draw(t, "retries")},
			Close: CloseInfo{State: rapid.SampledFrom([]CloseState{CloseNA, ClosePending, CloseClosed, CloseFailed}).Draw(t, "cs"),
				Attempts: rapid.IntRange(0, 50).Draw(t, "ca"), LastError: genError(t, "cerr"), NextTry: genTime(t, "next")},
			LastError: genError(t, "err"), Adopted: rapid.Bool().Draw(t, "adopted"), Gone: rapid.Bool().Draw(t, "gone"),
		}
		s.Operations = append(s.Operations, &OperationView{Operation: &op, InactiveFor: genDurPtr(t, "inactive"),
			ReapedIn: genDurPtr(t, "reaped"), Flags: genFlags(t, "oflags")})
	}
	for i, n := 0, rapid.IntRange(0, 3).Draw(t, "neps"); i < n; i++ {
		ep := Endpoint{Name: rapid.String().Draw(t, "name"), Type: rapid.String().Draw(t, "type"),
			State: rapid.String().Draw(t, "estate"), RowLimit: rapid.Int64Range(-1, 2e9).Draw(t, "limit"),
			Exhausted: rapid.Bool().Draw(t, "exhausted"), LastError: genError(t, "eerr"), ObservedAt: genTime(t, "observed")}
		for j, m := 0, rapid.IntRange(0, 3).Draw(t, "nix"); j < m; j++ {
			ep.Indexes = append(ep.Indexes, Index{Name: rapid.String().Draw(t, "ix"), Rows: rapid.Int64().Draw(t, "ixrows"),
				Ready: rapid.Bool().Draw(t, "ready"), Message: rapid.String().Draw(t, "ixmsg")})
		}
		for j, m := 0, rapid.IntRange(0, 3).Draw(t, "nsamples"); j < m; j++ {
			ep.Samples = append(ep.Samples, Sample{At: genTime(t, "sat"), Rows: rapid.Int64().Draw(t, "srows")})
		}
		v := EndpointView{Endpoint: ep, Rows: rapid.Int64().Draw(t, "rows"),
			GrowthPerMin: rapid.Float64().Draw(t, "growth"), ETAFull: genDurPtr(t, "eta"), Flags: genFlags(t, "eflags")}
		if ep.RowLimit > 0 {
			v.Usage = rapid.Float64Range(0, 10).Draw(t, "usage")
		}
		s.Endpoints = append(s.Endpoints, v)
	}
	for i, n := 0, rapid.IntRange(0, 2).Draw(t, "nerrs"); i < n; i++ {
		s.Errors = append(s.Errors, genErrorValue(t, "oerr"))
	}
	return s
}
