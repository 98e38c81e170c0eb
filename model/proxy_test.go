package model

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCloseFailedNamesWhoFailed(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	open := true
	op := Operation{StatementID: "a", State: StateFinished, CompletedAt: now.Add(-time.Second), Open: &open,
		Close: CloseInfo{State: CloseNA},
		Proxy: &ProxyAccount{CloseOutcome: ProxyCloseFailed, ClientCloseAttempts: 1, NextTry: now.Add(4 * time.Second),
			ClientCloseError: &ErrorInfo{Call: "CloseOperation", HTTPStatus: 503, Message: "try later"}}}
	flags := EvaluateOperation(op, now, DefaultThresholds)
	if len(flags) != 1 || flags[0].Kind != FlagCloseFailed || !strings.HasPrefix(flags[0].Detail, "the client's close failed") ||
		!strings.Contains(flags[0].Detail, "retries in 4s") {
		t.Errorf("client's failed close: %+v", flags)
	}
	op.Close = CloseInfo{State: CloseFailed, Attempts: 2}
	flags = EvaluateOperation(op, now, DefaultThresholds)
	if len(flags) != 1 || !strings.HasPrefix(flags[0].Detail, "dbxtop's close failed") {
		t.Errorf("dbxtop's failed close wins (the operator can act on it): %+v", flags)
	}
	op.Close, op.Proxy.CloseOutcome = CloseInfo{State: CloseNA}, "closed_by_proxy"
	if flags := EvaluateOperation(op, now, DefaultThresholds); len(flags) != 0 {
		t.Errorf("closed by the proxy: %+v", flags)
	}
}

func TestProxyAccountJSONRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	in := NewSnapshot(now, Workspace{Host: "h"}, []Operation{{StatementID: "a", State: StateRunning,
		Proxy: &ProxyAccount{LastClientRPC: now.Add(-time.Minute), CloseOutcome: "open", Heals: 2,
			Actions: []string{"12:00:00 healed: GetOperationStatus succeeded on attempt 2"}}}}, nil, nil, DefaultThresholds)
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Snapshot
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.Operations[0].Proxy, out.Operations[0].Proxy) {
		t.Errorf("proxy account: %+v → %+v", in.Operations[0].Proxy, out.Operations[0].Proxy)
	}
	if !strings.Contains(string(b), `"last_client_rpc_at":"2026-11-30T11:59:00Z"`) {
		t.Errorf("JSON %s", b)
	}
}

// TestSnapshotCarriesProxies: the proxies' statuses reach the snapshot
// and its JSON, cleaned, and come back decoded.
func TestSnapshotCarriesProxies(t *testing.T) {
	now := time.Date(2026, 12, 3, 19, 0, 0, 0, time.UTC)
	ws := Workspace{Host: "h", Proxies: []ProxyStatus{{Name: "127.0.0.2:8445", Up: true, Version: "1.4.0\x1b[2J", LastOK: now, Operations: 3},
		{Name: "127.0.0.3:8445", Reason: "connection refused"}}}
	s := NewSnapshot(now, ws, nil, nil, nil, Thresholds{})
	if len(s.Workspace.Proxies) != 2 || strings.ContainsRune(s.Workspace.Proxies[0].Version, 0x1b) {
		t.Fatalf("snapshot proxies: %+v", s.Workspace.Proxies)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"last_ok":null`) {
		t.Errorf("a proxy never read: last_ok not null in %s", b)
	}
	if len(back.Workspace.Proxies) != 2 || back.Workspace.Proxies[1].Reason != "connection refused" || !back.Workspace.Proxies[0].LastOK.Equal(now) {
		t.Fatalf("decoded proxies: %+v from %s", back.Workspace.Proxies, b)
	}
	if skew := ProxyVersionSkew(append(back.Workspace.Proxies, ProxyStatus{Name: "x", Version: "1.5.0"})); !strings.Contains(skew, "1.5.0 on x") {
		t.Errorf("skew %q", skew)
	}
}
