package model

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A gone operation is not live, whatever state it was last seen in: only
// truly live operations are counted as running.
func TestSummaryRunningExcludesGone(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f := false
	ops := []Operation{
		{StatementID: "live", State: StateRunning},
		{StatementID: "gone", State: StateRunning, Gone: true, Open: &f},
	}
	s := NewSnapshot(now, Workspace{}, ops, nil, nil, DefaultThresholds)
	if got := s.Summary().Running; got != 1 {
		t.Fatalf("summary.running = %d, want 1 (the gone operation is not live)", got)
	}
}

func TestTruncatedErrorAndStatusSourceRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ops := []Operation{{StatementID: "a", State: StateFinished, StatusSource: StatusViaStatementAPI,
		StatusNote: "warehouse w1 is STOPPED"}}
	errs := []ErrorInfo{{Kind: KindTruncated, Call: "ListQueries", Message: "page cap of 10 reached", Seen: 5000}}
	eps := []Endpoint{{Name: "vs", ObservedAt: now.Add(-time.Minute), ListingError: &ErrorInfo{Kind: KindTransport, Call: "ListEndpoints", Message: "reset"}}}
	s := NewSnapshot(now, Workspace{}, ops, eps, errs, DefaultThresholds)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"truncated"`, `"seen":5000`, `"status_source":"statement_api"`,
		`"status_note":"warehouse w1 is STOPPED"`, `"listing_error":{"kind":"transport"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Errors[0].Seen != 5000 || back.Operations[0].StatusSource != StatusViaStatementAPI || back.Endpoints[0].ListingError == nil {
		t.Errorf("round trip lost fields: %+v", back)
	}
}
