package model

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Each belief carries its source and when dbxtop heard it, in snapshot
// JSON too, and the proxy's word on openness survives a round trip.
func TestEvidenceInSnapshotJSON(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	open := true
	ops := []Operation{
		{StatementID: "a", State: StateFinished, CompletedAt: now.Add(-10 * time.Minute), Open: &open, OpenByProxy: true,
			LastPollOKAt: now.Add(-time.Second), StatusSource: StatusViaHistory, ClientActivityKnown: true,
			ClientLastActivity: now.Add(-9 * time.Minute), Proxy: &ProxyAccount{LastClientRPC: now.Add(-9 * time.Minute), CloseOutcome: "open"}},
		{StatementID: "b", State: StateFinished, LastPollOKAt: now.Add(-2 * time.Second), StatusSource: StatusViaThrift, Gone: true},
		{StatementID: "c", State: StateUnknown},
	}
	ev := EvidenceOf(&ops[0])
	if ev.Open.Source != EvidenceViaProxy || ev.State.Source != StatusViaHistory || ev.ClientActivity.Source != EvidenceViaProxy {
		t.Errorf("evidence of a proxied leak: %+v", ev)
	}
	if ev := EvidenceOf(&ops[1]); ev.Gone.Source != StatusViaThrift || !ev.Gone.At.Equal(ops[1].LastPollOKAt) {
		t.Errorf("evidence of a gone operation: %+v", ev)
	}
	if ev := EvidenceOf(&ops[2]); ev != (Evidence{}) {
		t.Errorf("evidence of an operation nothing confirmed: %+v, want none", ev)
	}
	views := make([]*OperationView, len(ops))
	for i := range ops {
		views[i] = EvaluateView(ops[i], now, DefaultThresholds)
	}
	s := SnapshotOf(now, Workspace{Host: "h"}, views, nil, nil)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"evidence":{"state":{"source":"query_history","at":"2026-12-03T11:59:59Z"},"open":{"source":"proxy"`) ||
		!strings.Contains(string(b), `"schema":"dbxtop.snapshot/v1"`) {
		t.Errorf("snapshot JSON lacks the evidence: %s", b)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, v := range back.Operations {
		if v.StatementID == "a" && !v.OpenByProxy {
			t.Errorf("the proxy's word on openness did not survive the round trip")
		}
	}
}
