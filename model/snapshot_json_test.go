package model

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// representative is one snapshot with every flag, a known and an unknown
// activity, an open/closed/unknown operation, a full and a growing
// endpoint, and an observation error.
func representative() Snapshot {
	now := time.Date(2026, 11, 29, 21, 30, 0, 250_000_000, time.UTC)
	reset := &ErrorInfo{Kind: KindTransport, Call: "GetOperationStatus", Message: "read: connection reset by peer",
		Attempts: 5, Elapsed: 15200 * time.Millisecond}
	ops := []Operation{
		{StatementID: "01f0c2a4-0000-4000-8000-000000000001", WarehouseID: "abc123", User: "alice@example.com",
			ClientApplication: "databricks-jdbc", SQL: "SELECT sleep(600)", State: StateRunning,
			StartedAt: now.Add(-7 * time.Minute), ClientActivityKnown: true, ClientLastActivity: now.Add(-6 * time.Minute),
			Open: boolp(true), FirstSeenAt: now.Add(-7 * time.Minute), LastPollOKAt: now.Add(-5 * time.Second),
			Poll: PollStats{OK: 80, Failed: 1, Retries: 2}},
		{StatementID: "01f0c2a4-0000-4000-8000-000000000002", WarehouseID: "abc123", User: "bob@example.com",
			ClientApplication: "dbt", SQL: "MERGE INTO t USING s ON t.id = s.id", State: StateRunning,
			StartedAt: now.Add(-3 * time.Minute), FirstSeenAt: now.Add(-3 * time.Minute), LastPollOKAt: now.Add(-90 * time.Second),
			Poll: PollStats{OK: 10, Failed: 12, Retries: 30}, LastError: reset},
		{StatementID: "01f0c2a4-0000-4000-8000-000000000003", WarehouseID: "def456", User: "carol@example.com",
			SQL: "SELECT id FROM range(10)", State: StateFinished, StartedAt: now.Add(-20 * time.Minute),
			CompletedAt: now.Add(-12 * time.Minute), Open: boolp(true), FirstSeenAt: now.Add(-20 * time.Minute),
			LastPollOKAt: now.Add(-12 * time.Minute), Poll: PollStats{OK: 4},
			Close: CloseInfo{State: CloseFailed, Attempts: 3, NextTry: now.Add(8 * time.Second),
				LastError: &ErrorInfo{Kind: KindUnavailable, Call: "CloseOperation", HTTPStatus: 503,
					ErrorCode: "TEMPORARILY_UNAVAILABLE", Message: "try later", RequestID: "5b0e4c8e-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
					Attempts: 3, Elapsed: 2500 * time.Millisecond}},
			Adopted: true},
		{StatementID: "01f0c2a4-0000-4000-8000-000000000004", WarehouseID: "abc123", User: "dave@example.com",
			SQL: "SELECT 1", State: StateFailed, StartedAt: now.Add(-10 * time.Minute), CompletedAt: now.Add(-3 * time.Minute),
			ServerError: "Query has been timed out due to inactivity.", Open: boolp(false),
			FirstSeenAt: now.Add(-10 * time.Minute), LastPollOKAt: now.Add(-3 * time.Minute), Poll: PollStats{OK: 40},
			Close: CloseInfo{State: CloseClosed, Attempts: 1}},
		{StatementID: "01f0c2a4-0000-4000-8000-000000000005", WarehouseID: "def456", User: "erin@example.com",
			SQL: "SELECT 2", State: StatePending, FirstSeenAt: now.Add(-2 * time.Second), LastPollOKAt: now.Add(-1 * time.Second),
			Poll: PollStats{OK: 1}},
	}
	eps := []Endpoint{
		{Name: "vs-ingest", Type: "STANDARD", State: "ONLINE", RowLimit: 320_000_000, Exhausted: true,
			RowLimitSource: LimitLearned, RowLimitWhy: "limit learned 2026-11-29 21:29 UTC from RESOURCE_EXHAUSTED at 320,000,000 rows",
			Learned:    &LearnedLimit{Rows: 320_000_000, At: now.Add(-time.Minute), RequestID: "0c7e9a52-3b1d-4f6e-9a8b-7c6d5e4f3a2b"},
			Throughput: floatp(42), NumIndexes: 2, StateMessage: "Endpoint is online.",
			Indexes: []Index{{Name: "main.docs.chunks", Type: IndexDeltaSync, Dimension: 768, Rows: 319_990_000, Ready: true, Message: "ok"},
				{Name: "main.docs.titles", Type: IndexDirectAccess, Rows: 10_000, Ready: false, Message: "Index is being provisioned"}},
			LastError: &ErrorInfo{Kind: KindPermanent, Call: "UpsertDataVectorIndex", HTTPStatus: 429,
				ErrorCode: "RESOURCE_EXHAUSTED", Message: "Vector search endpoint has reached its capacity",
				RequestID: "0c7e9a52-3b1d-4f6e-9a8b-7c6d5e4f3a2b", Attempts: 1, Elapsed: 31 * time.Millisecond},
			Samples:    []Sample{{At: now.Add(-2 * time.Minute), Rows: 318_000_000}, {At: now, Rows: 320_000_000}},
			ObservedAt: now},
		{Name: "vs-growing", Type: "STORAGE_OPTIMIZED", State: "ONLINE", RowLimit: 1_000_000_000,
			RowLimitSource: LimitPublished, RowLimitWhy: "≈1 B: Delta Sync (768 dims) on STORAGE_OPTIMIZED, published figure",
			Indexes:    []Index{{Name: "main.rag.v", Rows: 850_000_000, Ready: true}},
			Samples:    []Sample{{At: now.Add(-5 * time.Minute), Rows: 849_000_000}, {At: now, Rows: 850_000_000}},
			ObservedAt: now},
		{Name: "vs-custom", Type: "UNKNOWN_TYPE", State: "PROVISIONING", Indexes: []Index{{Name: "x", Rows: 7}}},
	}
	errs := []ErrorInfo{{Kind: KindThrottled, Call: "ListQueries", HTTPStatus: 429, ErrorCode: "REQUEST_LIMIT_EXCEEDED",
		Message: "rate limit", RequestID: "a1b2c3d4-0000-4000-8000-000000000000", Attempts: 6, Elapsed: 30 * time.Second}}
	return NewSnapshot(now, Workspace{Host: "https://adb-123.4.azuredatabricks.net", Warehouses: []string{"abc123", "def456"}},
		ops, eps, errs, DefaultThresholds)
}

func floatp(f float64) *float64 { return &f }

func TestSnapshotGolden(t *testing.T) {
	got, err := json.MarshalIndent(representative(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "snapshot.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./model -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("snapshot JSON differs from %s (rerun with -update after checking):\n%s", path, got)
	}
}

// JSON → Snapshot → JSON must be byte-identical, and Snapshot → JSON →
// Snapshot must give back the same value.
func TestSnapshotRoundTrip(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "snapshot.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s Snapshot
	if err := json.Unmarshal(golden, &s); err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(again, '\n'), golden) {
		t.Errorf("re-encoded golden differs:\n%s", again)
	}
	if want := representative(); !reflect.DeepEqual(s, want) {
		t.Errorf("decoded snapshot differs from the original\n got %+v\nwant %+v", s, want)
	}
}

// The top-level and per-row keys come in the order docs/model.md documents.
func TestSnapshotKeyOrder(t *testing.T) {
	b, err := json.Marshal(representative())
	if err != nil {
		t.Fatal(err)
	}
	checkOrder(t, string(b), `"schema"`, `"generated_at"`, `"workspace"`, `"summary"`, `"operations"`, `"endpoints"`, `"errors"`)
	checkOrder(t, string(b), `"statement_id"`, `"warehouse_id"`, `"user"`, `"client_application"`, `"state"`, `"sql"`,
		`"started_at"`, `"completed_at"`, `"last_poll_ok_at"`, `"inactive_for_s"`, `"reaped_in_s"`, `"open"`, `"poll"`,
		`"close"`, `"flags"`, `"last_error"`)
	checkOrder(t, string(b), `{"operations":`, `"running"`, `"flagged"`, `"warnings"`, `"critical"`, `"endpoints":`, `"endpoints_exhausted"`)
	checkOrder(t, string(b), `{"name":"vs-custom"`, `"type"`, `"state"`, `"rows"`, `"row_limit"`, `"usage"`,
		`"growth_rows_per_min"`, `"eta_full_s"`, `"exhausted"`, `"last_error"`, `"flags"`, `"indexes"`)
	checkOrder(t, string(b), `{"kind":"throttled"`, `"call"`, `"error_code"`, `"http_status"`, `"message"`, `"request_id"`,
		`"attempts"`, `"elapsed_s":30}`)
}

func checkOrder(t *testing.T, s string, keys ...string) {
	t.Helper()
	pos := -1
	for _, k := range keys {
		i := strings.Index(s[pos+1:], k)
		if i < 0 {
			t.Errorf("key %s missing or out of order (after %d)", k, pos)
			return
		}
		pos += 1 + i
	}
}

func TestSnapshotValues(t *testing.T) {
	var m struct {
		Schema      string         `json:"schema"`
		GeneratedAt string         `json:"generated_at"`
		Summary     map[string]int `json:"summary"`
		Operations  []map[string]any
		Endpoints   []map[string]any
	}
	b, _ := json.Marshal(representative())
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Schema != "dbxtop.snapshot/v1" || m.GeneratedAt != "2026-11-29T21:30:00.25Z" {
		t.Errorf("schema %q generated_at %q", m.Schema, m.GeneratedAt)
	}
	want := map[string]int{"operations": 5, "running": 3, "flagged": 4, "warnings": 6, "critical": 5,
		"endpoints": 3, "endpoints_exhausted": 1}
	if !reflect.DeepEqual(m.Summary, want) {
		t.Errorf("summary %v, want %v", m.Summary, want)
	}
	byID := map[string]map[string]any{}
	for _, o := range m.Operations {
		byID[o["statement_id"].(string)[32:]] = o
	}
	if v := byID["0001"]["inactive_for_s"]; v != 360.0 {
		t.Errorf("inactive_for_s %v, want 360", v)
	}
	if v := byID["0001"]["reaped_in_s"]; v != 70.0 {
		t.Errorf("reaped_in_s %v, want 70", v)
	}
	for _, k := range []string{"inactive_for_s", "reaped_in_s", "open", "started_at", "completed_at"} {
		if v, ok := byID["0005"][k]; !ok || v != nil {
			t.Errorf("unknown %s encodes as %v (present %v), want null", k, v, ok)
		}
	}
	if byID["0004"]["open"] != false {
		t.Errorf("open false encodes as %v", byID["0004"]["open"])
	}
	for _, e := range m.Endpoints {
		switch e["name"] {
		case "vs-custom":
			if e["usage"] != nil || e["eta_full_s"] != nil {
				t.Errorf("unknown limit: usage %v eta %v, want null", e["usage"], e["eta_full_s"])
			}
		case "vs-growing":
			if e["usage"] != 0.85 || e["growth_rows_per_min"] != 200000.0 || e["eta_full_s"] != 45000.0 {
				t.Errorf("vs-growing: %v %v %v", e["usage"], e["growth_rows_per_min"], e["eta_full_s"])
			}
		}
	}
}

func TestSnapshotEmptyListsAndZero(t *testing.T) {
	b, err := json.Marshal(Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":"dbxtop.snapshot/v1","generated_at":null,"workspace":{"host":"","warehouses":[]},` +
		`"summary":{"operations":0,"running":0,"flagged":0,"warnings":0,"critical":0,"endpoints":0,"endpoints_exhausted":0},` +
		`"operations":[],"endpoints":[],"errors":[],"clients":[]}`
	if string(b) != want {
		t.Errorf("empty snapshot:\n got %s\nwant %s", b, want)
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil || !reflect.DeepEqual(s, Snapshot{}) {
		t.Errorf("decode empty: %+v %v", s, err)
	}
}

func TestSnapshotDecodeRejects(t *testing.T) {
	base := `{"schema":"dbxtop.snapshot/v1","operations":[%s]}`
	cases := map[string]string{
		"wrong schema":   `{"schema":"dbxtop.snapshot/v2"}`,
		"no schema":      `{}`,
		"bad state":      strings.Replace(base, "%s", `{"state":"DONE","close":{"state":"n/a"}}`, 1),
		"bad close":      strings.Replace(base, "%s", `{"state":"RUNNING","close":{"state":"maybe"}}`, 1),
		"bad severity":   strings.Replace(base, "%s", `{"state":"RUNNING","close":{"state":"n/a"},"flags":[{"kind":"X","severity":"info"}]}`, 1),
		"bad time":       `{"schema":"dbxtop.snapshot/v1","generated_at":"yesterday"}`,
		"bad duration":   strings.Replace(base, "%s", `{"state":"RUNNING","close":{"state":"n/a"},"inactive_for_s":"60"}`, 1),
		"huge duration":  strings.Replace(base, "%s", `{"state":"RUNNING","close":{"state":"n/a"},"inactive_for_s":1e300}`, 1),
		"overflow":       strings.Replace(base, "%s", `{"state":"RUNNING","close":{"state":"n/a"},"inactive_for_s":9300000000}`, 1),
		"time off range": `{"schema":"dbxtop.snapshot/v1","generated_at":"0000-01-01T00:00:00+01:00"}`,
	}
	for name, in := range cases {
		var s Snapshot
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestSecondsCodec(t *testing.T) {
	cases := map[string]time.Duration{
		"0": 0, "1": time.Second, "1.5": 1500 * time.Millisecond, "0.000000001": 1, "-2.25": -2250 * time.Millisecond,
		"1e3": 1000 * time.Second, "1.5E-3": 1500 * time.Microsecond, "0.0000000015": 2, // rounds to nearest ns
		"-9223372036.854775808": time.Duration(-1 << 63),
	}
	for in, want := range cases {
		got, err := parseSeconds(in)
		if err != nil || got != want {
			t.Errorf("parseSeconds(%s) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, d := range []time.Duration{0, 1, time.Second, 72*time.Second + 250*time.Millisecond, -1, 1<<63 - 1, -1 << 63} {
		s := formatSeconds(d)
		back, err := parseSeconds(s)
		if err != nil || back != d {
			t.Errorf("%v → %s → %v, %v", d, s, back, err)
		}
	}
}

// An endpoint flagged EXHAUSTED says "exhausted": true even when the server
// never refused a write (usage reached 100 %); server_exhausted keeps the
// server's own answer.
func TestExhaustedFollowsTheFlag(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ep := Endpoint{Name: "vs", Type: "STANDARD", State: "ONLINE", RowLimit: 100, ObservedAt: now,
		Indexes: []Index{{Name: "ix", Rows: 100, Ready: true}}}
	s := NewSnapshot(now, Workspace{Host: "h"}, nil, []Endpoint{ep}, nil, DefaultThresholds)
	if !s.Endpoints[0].HasFlag(FlagExhausted) {
		t.Fatalf("an endpoint at 100%% of its limit is not flagged EXHAUSTED: %+v", s.Endpoints[0].Flags)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"exhausted":true`) || !strings.Contains(string(b), `"server_exhausted":false`) {
		t.Errorf("JSON: %s", b)
	}
}
