package model

import (
	"strings"
	"testing"
	"time"
)

func TestSeverityOrder(t *testing.T) {
	if !(SeverityNone.Rank() < SeverityWarning.Rank() && SeverityWarning.Rank() < SeverityCritical.Rank()) {
		t.Fatal("ranks out of order")
	}
	if Severity("bogus").Rank() != 0 {
		t.Error("an unknown severity must not outrank a real one")
	}
	if SeverityWarning.Max(SeverityCritical) != SeverityCritical || SeverityCritical.Max(SeverityWarning) != SeverityCritical ||
		SeverityNone.Max(SeverityWarning) != SeverityWarning {
		t.Error("Max")
	}
	if MaxSeverity(nil) != SeverityNone {
		t.Error("no flags must be SeverityNone")
	}
}

func TestSnapshotMaxSeverity(t *testing.T) {
	s := Snapshot{}
	if s.MaxSeverity() != SeverityNone {
		t.Error("empty snapshot")
	}
	s.Operations = []*OperationView{{Flags: []Flag{{Kind: FlagStale, Severity: SeverityWarning}}}}
	if s.MaxSeverity() != SeverityWarning {
		t.Error("warning operation")
	}
	s.Endpoints = []EndpointView{{Flags: []Flag{{Kind: FlagExhausted, Severity: SeverityCritical}}}}
	if s.MaxSeverity() != SeverityCritical {
		t.Error("critical endpoint")
	}
	if !s.Endpoints[0].HasFlag(FlagExhausted) || s.Operations[0].HasFlag(FlagInactive) {
		t.Error("HasFlag")
	}
}

func TestNewSnapshotCopiesAndOrders(t *testing.T) {
	ops := []Operation{
		{StatementID: "b", State: StateRunning},
		{StatementID: "a", State: StateFinished, Open: boolp(true), CompletedAt: t0.Add(-time.Hour)}, // UNCLOSED critical
		{StatementID: "c"}, // State "" → UNKNOWN
	}
	eps := []Endpoint{{Name: "z"}, {Name: "y"}}
	ws := Workspace{Host: "h", Warehouses: []string{"w"}}
	s := NewSnapshot(t0, ws, ops, eps, nil, DefaultThresholds)
	if got := ids(s.Operations); strings.Join(got, "") != "abc" {
		t.Errorf("order %v, want the flagged one first then by id", got)
	}
	if s.Operations[2].State != StateUnknown || s.Operations[2].Close.State != CloseNA {
		t.Errorf("unknown values not normalised: %+v", s.Operations[2].Operation)
	}
	if s.Endpoints[0].Name != "y" {
		t.Error("endpoints not sorted by name")
	}
	ws.Warehouses[0] = "changed"
	if s.Workspace.Warehouses[0] != "w" {
		t.Error("NewSnapshot aliases its input")
	}
	if ops[0].StatementID != "b" {
		t.Error("NewSnapshot reordered its input")
	}
}

func TestErrorInfoString(t *testing.T) {
	e := ErrorInfo{Kind: KindPermanent, Call: "UpsertDataVectorIndex", HTTPStatus: 429, ErrorCode: "RESOURCE_EXHAUSTED",
		Message: "endpoint full", RequestID: "r-1", Attempts: 1, Elapsed: 1234567 * time.Microsecond}
	want := "UpsertDataVectorIndex: permanent HTTP 429 RESOURCE_EXHAUSTED: endpoint full (request_id r-1, 1 attempt, after 1.235s)"
	if got := e.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := (ErrorInfo{}).String(); got != "error" {
		t.Errorf("zero ErrorInfo: %q", got)
	}
}
