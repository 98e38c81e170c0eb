package model

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchOps is a large, realistic set: every tenth operation is inactive.
func benchOps(n int) []Operation {
	ops := make([]Operation, n)
	for i := range ops {
		ops[i] = Operation{StatementID: fmt.Sprintf("01f0c2a4-0000-4000-8000-%012d", i), WarehouseID: "abc123",
			User: "user@example.com", SQL: "SELECT * FROM t WHERE id = 1", State: StateRunning,
			StartedAt: t0.Add(-time.Hour), FirstSeenAt: t0.Add(-time.Hour), LastPollOKAt: t0.Add(-time.Second),
			ClientActivityKnown: true, ClientLastActivity: t0.Add(-time.Duration(i%10) * 20 * time.Second)}
	}
	return ops
}

// BenchmarkNewSnapshot10k: evaluating and sorting 10,000 operations, what
// every TUI refresh does.
func BenchmarkNewSnapshot10k(b *testing.B) {
	ops := benchOps(10_000)
	b.ReportAllocs()
	for b.Loop() {
		_ = NewSnapshot(t0, Workspace{}, ops, nil, nil, DefaultThresholds)
	}
}

// BenchmarkSnapshotMarshal10k: encoding it to the snapshot JSON (docs/model.md).
func BenchmarkSnapshotMarshal10k(b *testing.B) {
	s := NewSnapshot(t0, Workspace{}, benchOps(10_000), nil, nil, DefaultThresholds)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(s); err != nil {
			b.Fatal(err)
		}
	}
}
