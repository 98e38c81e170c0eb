package model

import (
	"strings"
	"testing"
	"time"
)

// TestCloseFailedResolvesOnceClosed: CLOSE_FAILED stands while the
// operation is open and clears once it is closed, whoever closed it;
// ClosedBy names the closer for the flag-cleared event.
func TestCloseFailedResolvesOnceClosed(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	open, closed := true, false
	base := Operation{StatementID: "s1", State: StateFinished, StartedAt: now.Add(-time.Hour), CompletedAt: now.Add(-50 * time.Minute),
		Open: &open, Close: CloseInfo{State: CloseFailed, Attempts: 3}}
	if v := NewOperationView(base, now, DefaultThresholds); !v.HasFlag(FlagCloseFailed) {
		t.Fatalf("open with a failed close: no CLOSE_FAILED (%v)", v.Flags)
	}
	if by := ClosedBy(&base); by != "" {
		t.Errorf("ClosedBy while open: %q", by)
	}
	for _, tc := range []struct {
		name string
		set  func(o *Operation)
		by   string
	}{
		{"server says closed", func(o *Operation) { o.Open = &closed }, "seen closed on the server"},
		{"dbxtop's retry", func(o *Operation) { o.Close.State = CloseClosed; o.Open = &closed }, "dbxtop's close"},
		{"client via proxy", func(o *Operation) { o.Proxy = &ProxyAccount{CloseOutcome: "closed"} }, "by its client"},
		{"proxy queue", func(o *Operation) {
			o.Close.State = CloseNA
			o.Proxy = &ProxyAccount{CloseOutcome: "closed_by_proxy"}
		}, "proxy's close queue"},
	} {
		op := base
		tc.set(&op)
		v := NewOperationView(op, now, DefaultThresholds)
		if v.HasFlag(FlagCloseFailed) || v.HasFlag(FlagUnclosed) && op.Open != nil && !*op.Open {
			t.Errorf("%s: still flagged %v", tc.name, v.Flags)
		}
		if by := ClosedBy(&op); !strings.Contains(by, tc.by) {
			t.Errorf("%s: ClosedBy %q, want %q", tc.name, by, tc.by)
		}
	}
}
