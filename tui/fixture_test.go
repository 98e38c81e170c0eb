package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// fixedNow is the clock of every test: goldens must not depend on when
// they run.
var fixedNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fakeEngine returns whatever snapshot the test sets and records actions.
// It is the TUI's only collaborator, so a fake is the honest seam here;
// the poller's real engine is tested in poller/.
type fakeEngine struct {
	mu       sync.Mutex
	snap     model.Snapshot
	health   poller.Health
	readOnly bool
	actErr   error
	calls    []string // "cancel <id>", …
	events   chan model.Event
	closed   bool
}

func newFakeEngine(snap model.Snapshot) *fakeEngine {
	return &fakeEngine{snap: snap, events: make(chan model.Event, 64), health: fixtureHealth()}
}

func (f *fakeEngine) Snapshot() model.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap
}

func (f *fakeEngine) setSnapshot(s model.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap = s
}

func (f *fakeEngine) Events() <-chan model.Event { return f.events }

func (f *fakeEngine) Health() poller.Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health
}

func (f *fakeEngine) ReadOnly() bool { return f.readOnly }

func (f *fakeEngine) act(name, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+id)
	if f.readOnly {
		return poller.ErrReadOnly
	}
	return f.actErr
}

func (f *fakeEngine) Adopt(_ context.Context, id string) error  { return f.act("adopt", id) }
func (f *fakeEngine) Close(_ context.Context, id string) error  { return f.act("close", id) }
func (f *fakeEngine) Cancel(_ context.Context, id string) error { return f.act("cancel", id) }

func (f *fakeEngine) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// closeEvents ends the event stream, releasing the TUI's reader.
func (f *fakeEngine) closeEvents() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.events)
	}
}

func dur(d time.Duration) *time.Duration { return &d }
func boolp(b bool) *bool                 { return &b }

const (
	idInactive    = "01ef2c3a-7d1b-4c2e-9a41-5b6c7d8e9f01"
	idStale       = "01ef2c3b-1111-4c2e-9a41-5b6c7d8e9f02"
	idUnclosed    = "01ef2c3c-2222-4c2e-9a41-5b6c7d8e9f03"
	idCloseFailed = "01ef2c3d-3333-4c2e-9a41-5b6c7d8e9f04"
	idReaped      = "01ef2c3e-4444-4c2e-9a41-5b6c7d8e9f05"
	idHealthy     = "01ef2c3f-5555-4c2e-9a41-5b6c7d8e9f06"
	idUnknown     = "01ef2c40-6666-4c2e-9a41-5b6c7d8e9f07"
	idClosed      = "01ef2c41-7777-4c2e-9a41-5b6c7d8e9f08"
	reqStale      = "6f1d0c2e-8b3a-4f5e-9d7c-1a2b3c4d5e6f"
	reqClose      = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	reqExhausted  = "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
)

func fixtureHealth() poller.Health {
	return poller.Health{
		Followed: 8, InFlight: 2, BudgetAvailable: 480, BudgetCapacity: 500,
		Polls: 1234, Retries: 17, GiveUps: 1,
		LastError: &model.ErrorInfo{Kind: model.KindTransport, Call: "GetOperationStatus",
			Message: "read: connection reset by peer", Attempts: 3, Elapsed: 2100 * time.Millisecond, RequestID: reqStale},
	}
}

// fixtureSnapshot has one operation per flag, healthy ones, and three
// endpoints: exhausted, near capacity, and idle.
func fixtureSnapshot() model.Snapshot {
	n := fixedNow
	ops := []*model.OperationView{
		{Operation: &model.Operation{StatementID: idInactive, WarehouseID: "wh-1", User: "alice@example.com",
			ClientApplication: "databricks-jdbc", State: model.StateRunning, StartedAt: n.Add(-7 * time.Minute),
			SQL:                 "SELECT c.customer_id, sum(o.amount) AS total\nFROM sales.orders o JOIN sales.customers c ON o.customer_id = c.id\nWHERE o.order_date >= '2026-01-01'\nGROUP BY c.customer_id ORDER BY total DESC",
			ClientActivityKnown: true, ClientLastActivity: n.Add(-6 * time.Minute), Open: boolp(true),
			LastPollOKAt: n.Add(-2 * time.Second), Poll: model.PollStats{OK: 140, Retries: 2}},
			InactiveFor: dur(6 * time.Minute), ReapedIn: dur(70 * time.Second),
			Flags: []model.Flag{{Kind: model.FlagInactive, Severity: model.SeverityCritical, Detail: "no client call for 6m00s; reaper in 1m10s"}}},
		{Operation: &model.Operation{StatementID: idStale, WarehouseID: "wh-2", User: "bob@example.com",
			ClientApplication: "databricks-sql-go", State: model.StateRunning, StartedAt: n.Add(-3 * time.Minute),
			SQL: "SELECT sleep(600)", ClientActivityKnown: true, ClientLastActivity: n.Add(-5 * time.Second),
			LastPollOKAt: n.Add(-75 * time.Second), Poll: model.PollStats{OK: 20, Failed: 9, Retries: 9},
			LastError: &model.ErrorInfo{Kind: model.KindTransport, Call: "GetOperationStatus", Message: "read: connection reset by peer",
				Attempts: 3, Elapsed: 2100 * time.Millisecond, RequestID: reqStale}},
			InactiveFor: dur(5 * time.Second), ReapedIn: dur(425 * time.Second),
			Flags: []model.Flag{{Kind: model.FlagStale, Severity: model.SeverityWarning, Detail: "no successful poll for 1m15s (still trying)"}}},
		{Operation: &model.Operation{StatementID: idUnclosed, WarehouseID: "wh-1", User: "carol@example.com",
			ClientApplication: "pyodbc", State: model.StateFinished, StartedAt: n.Add(-9 * time.Minute), CompletedAt: n.Add(-4 * time.Minute),
			SQL: "SELECT id FROM range(1000)", Open: boolp(true), Poll: model.PollStats{OK: 60}},
			Flags: []model.Flag{{Kind: model.FlagUnclosed, Severity: model.SeverityWarning, Detail: "finished 4m00s ago, still open"}}},
		{Operation: &model.Operation{StatementID: idCloseFailed, WarehouseID: "wh-2", User: "dave@example.com",
			State: model.StateFinished, StartedAt: n.Add(-12 * time.Minute), CompletedAt: n.Add(-10 * time.Minute),
			SQL: "INSERT INTO audit.events SELECT * FROM staging.events", Open: boolp(true), Adopted: true,
			Close: model.CloseInfo{State: model.CloseFailed, Attempts: 3, NextTry: n.Add(8 * time.Second),
				LastError: &model.ErrorInfo{Kind: model.KindUnavailable, Call: "CloseOperation", HTTPStatus: 503,
					ErrorCode: "TEMPORARILY_UNAVAILABLE", Message: "The service is temporarily unavailable", Attempts: 4,
					Elapsed: 3 * time.Second, RequestID: reqClose}}},
			Flags: []model.Flag{
				{Kind: model.FlagCloseFailed, Severity: model.SeverityCritical, Detail: "3 close attempts failed; next in 8s"},
				{Kind: model.FlagUnclosed, Severity: model.SeverityWarning, Detail: "finished 10m00s ago, still open"}}},
		{Operation: &model.Operation{StatementID: idReaped, WarehouseID: "wh-1", User: "etl-bot",
			ClientApplication: "databricks-jdbc", State: model.StateFailed, StartedAt: n.Add(-15 * time.Minute), CompletedAt: n.Add(-8 * time.Minute),
			SQL:         "MERGE INTO dim.customers t USING updates u ON t.id = u.id WHEN MATCHED THEN UPDATE SET *",
			ServerError: "Query has been timed out due to inactivity.", Open: boolp(false)},
			Flags: []model.Flag{{Kind: model.FlagReaped, Severity: model.SeverityWarning, Detail: "the server reaped it for inactivity"}}},
		{Operation: &model.Operation{StatementID: idHealthy, WarehouseID: "wh-2", User: "frank@example.com",
			State: model.StateRunning, StartedAt: n.Add(-40 * time.Second), SQL: "SELECT count(*) FROM web.clicks",
			ClientActivityKnown: true, ClientLastActivity: n.Add(-1 * time.Second), Poll: model.PollStats{OK: 12}},
			InactiveFor: dur(time.Second), ReapedIn: dur(429 * time.Second)},
		{Operation: &model.Operation{StatementID: idUnknown, WarehouseID: "wh-1", User: "grace@example.com",
			State: model.StatePending, StartedAt: n.Add(-5 * time.Second), SQL: "SELECT 1"}},
		{Operation: &model.Operation{StatementID: idClosed, WarehouseID: "wh-2", User: "heidi@example.com",
			State: model.StateClosed, StartedAt: n.Add(-20 * time.Minute), CompletedAt: n.Add(-19 * time.Minute),
			SQL: "SELECT 42", Close: model.CloseInfo{State: model.CloseClosed, Attempts: 1}}},
	}
	exhaustedErr := &model.ErrorInfo{Kind: model.KindPermanent, Call: "UpsertDataVectorIndex", HTTPStatus: 429,
		ErrorCode: "RESOURCE_EXHAUSTED", Message: "Endpoint vs-ingest has reached its row limit", Attempts: 1, RequestID: reqExhausted}
	pct := func(f float64) *float64 { return &f }
	eps := []model.EndpointView{
		{Endpoint: model.Endpoint{Name: "vs-ingest", Type: "STANDARD", State: "ONLINE", RowLimit: 2_000_000, Exhausted: true,
			RowLimitSource: model.LimitLearned, RowLimitWhy: "limit learned 2026-11-29 21:28 UTC from RESOURCE_EXHAUSTED at 2,000,000 rows (over the published ≈2 M)",
			LastError: exhaustedErr, Throughput: pct(41), NumIndexes: 2,
			Indexes: []model.Index{{Name: "main.docs.chunks_idx", Type: model.IndexDirectAccess, Dimension: 1024, Rows: 1_400_000, Ready: true, Message: "Index is ready and serving."},
				{Name: "main.docs.titles_idx", Type: model.IndexDirectAccess, Dimension: 1024, Rows: 600_000, Ready: true}}},
			Rows: 2_000_000, Usage: 1.0, GrowthPerMin: 12000, WriteRowsPerMin: 12000,
			Flags: []model.Flag{{Kind: model.FlagExhausted, Severity: model.SeverityCritical, Detail: "RESOURCE_EXHAUSTED"}}},
		{Endpoint: model.Endpoint{Name: "vs-search", Type: "STANDARD", State: "ONLINE", RowLimit: 2_000_000,
			RowLimitSource: model.LimitPublished, RowLimitWhy: "≈2 M: Direct Access on STANDARD, published figure", Throughput: pct(93), NumIndexes: 1,
			Indexes: []model.Index{{Name: "main.kb.faq_idx", Type: model.IndexDirectAccess, Dimension: 768, Rows: 1_700_000, Ready: true}}},
			Rows: 1_700_000, Usage: 0.85, GrowthPerMin: 25000, WriteRowsPerMin: 31000, ETAFull: dur(12 * time.Minute),
			Flags: []model.Flag{{Kind: model.FlagCapacity, Severity: model.SeverityWarning, Detail: "85% of the row limit"},
				{Kind: model.FlagThroughput, Severity: model.SeverityWarning, Detail: "concurrency utilisation 93%: queries and writes beyond it fail"}}},
		{Endpoint: model.Endpoint{Name: "vs-archive", Type: "STORAGE_OPTIMIZED", State: "YELLOW_STATE", StateMessage: "One replica is unhealthy.", RowLimit: 1_000_000_000,
			RowLimitSource: model.LimitConfig, RowLimitWhy: "1,000,000,000: config file (over the published ≈1 B)", NumIndexes: 1,
			Indexes: []model.Index{{Name: "main.archive.logs_idx", Type: model.IndexDeltaSync, Dimension: 768, Rows: 100_000_000, Ready: false, Message: "syncing"}}},
			Rows: 100_000_000, Usage: 0.1,
			Flags: []model.Flag{{Kind: model.FlagEndpointState, Severity: model.SeverityWarning, Detail: "state YELLOW_STATE: One replica is unhealthy."},
				{Kind: model.FlagIndexNotReady, Severity: model.SeverityWarning, Detail: "1 of 1 indexes not ready: main.archive.logs_idx: syncing"}}},
	}
	return model.Snapshot{
		GeneratedAt: n,
		Workspace:   model.Workspace{Host: "https://adb-1234567890.12.azuredatabricks.net", Warehouses: []string{"wh-1", "wh-2"}},
		Operations:  ops,
		Endpoints:   eps,
	}
}

// fixtureEvents are what the engine would have said about the fixture.
func fixtureEvents() []model.Event {
	n := fixedNow
	return []model.Event{
		{At: n.Add(-80 * time.Second), Kind: model.EventRetry, StatementID: idStale, Call: "GetOperationStatus",
			Message: "attempt 2 failed, retrying on a fresh connection in 800ms", RequestID: reqStale},
		{At: n.Add(-75 * time.Second), Kind: model.EventGiveUp, StatementID: idStale,
			Err:       &model.ErrorInfo{Kind: model.KindTransport, Call: "GetOperationStatus", Message: "read: connection reset by peer", Attempts: 3, Elapsed: 2100 * time.Millisecond, RequestID: reqStale},
			RequestID: reqStale},
		{At: n.Add(-60 * time.Second), Kind: model.EventFlagRaised, StatementID: idInactive,
			Flag: &model.Flag{Kind: model.FlagInactive, Severity: model.SeverityCritical, Detail: "no client call for 5m00s"}},
		{At: n.Add(-30 * time.Second), Kind: model.EventCloseFailed, StatementID: idCloseFailed,
			Err:       &model.ErrorInfo{Kind: model.KindUnavailable, Call: "CloseOperation", HTTPStatus: 503, ErrorCode: "TEMPORARILY_UNAVAILABLE", Message: "The service is temporarily unavailable", Attempts: 4, RequestID: reqClose},
			RequestID: reqClose, Message: "close attempt 3 failed; retry in 8s"},
		{At: n.Add(-10 * time.Second), Kind: model.EventCapacity, Endpoint: "vs-ingest",
			Message: "RESOURCE_EXHAUSTED: Endpoint vs-ingest has reached its row limit", RequestID: reqExhausted},
	}
}

// testRenderer pins the colour profile so goldens never depend on the
// terminal running the tests.
func testRenderer(p termenv.Profile) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(p)
	r.SetHasDarkBackground(true)
	return r
}

func testOptions() Options {
	return Options{
		Refresh:   time.Second,
		Now:       func() time.Time { return fixedNow },
		Version:   "v0.0.0-test",
		Renderer:  testRenderer(termenv.ANSI256),
		Workspace: model.Workspace{Host: "https://adb-1234567890.12.azuredatabricks.net", Warehouses: []string{"wh-1", "wh-2"}},
	}
}

var errBoom = errors.New("boom")

func ids(m *Model) []string {
	var out []string
	for _, r := range m.ops.rows {
		out = append(out, m.ctx.snap.Operations[r].StatementID)
	}
	return out
}

func must(t *testing.T, cond bool, format string, a ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, a...)
	}
}

var _ = fmt.Sprint
