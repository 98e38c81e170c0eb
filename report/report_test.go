package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// fixture is a snapshot with one of everything an operator can be paged
// for, plus hostile server text (newlines, an ANSI escape, Unicode).
func fixture() model.Snapshot {
	th := model.Thresholds{InactivityWarn: 15 * time.Second, ServerIdleTimeout: 90 * time.Second, LeakAfter: 20 * time.Second}
	ops := []model.Operation{
		{
			StatementID: "01ef0000-0000-4000-8000-000000000001", WarehouseID: "wh-shared", User: "alice@example.com",
			ClientApplication: "Tableau", SQL: "SELECT *\n  FROM sales\x1b[31m WHERE région = 'Zürich'",
			State: model.StateRunning, StartedAt: t0.Add(-3 * time.Minute),
			ClientActivityKnown: true, ClientLastActivity: t0.Add(-80 * time.Second), Open: ptr(true),
			FirstSeenAt: t0.Add(-3 * time.Minute), LastPollOKAt: t0.Add(-time.Second), Poll: model.PollStats{OK: 90, Retries: 2},
			Close: model.CloseInfo{State: model.CloseNA},
		},
		{
			StatementID: "01ef0000-0000-4000-8000-000000000002", WarehouseID: "wh-etl", User: "etl-svc",
			ClientApplication: "dbt", SQL: "INSERT INTO t SELECT 1", State: model.StateFinished,
			StartedAt: t0.Add(-2 * time.Minute), CompletedAt: t0.Add(-90 * time.Second), Open: ptr(true),
			FirstSeenAt: t0.Add(-2 * time.Minute), LastPollOKAt: t0.Add(-2 * time.Second), Poll: model.PollStats{OK: 40},
			Close: model.CloseInfo{State: model.CloseFailed, Attempts: 2, LastError: &model.ErrorInfo{
				Kind: model.KindUnavailable, Call: "CloseOperation", ErrorCode: "TEMPORARILY_UNAVAILABLE", HTTPStatus: 503,
				Message: "try later", RequestID: "aaaaaaaa-1111-4222-8333-444444444444", Attempts: 1,
			}},
		},
		{
			StatementID: "01ef0000-0000-4000-8000-000000000003", WarehouseID: "wh-shared", User: "bob@example.com",
			ClientApplication: "JDBC", SQL: "SELECT count(*) FROM big | pipe", State: model.StateFailed,
			StartedAt: t0.Add(-10 * time.Minute), CompletedAt: t0.Add(-4 * time.Minute),
			ServerError: "Query has been timed out due to inactivity.", Open: ptr(false),
			FirstSeenAt: t0.Add(-5 * time.Minute), LastPollOKAt: t0.Add(-time.Second), Poll: model.PollStats{OK: 3},
		},
		{
			StatementID: "01ef0000-0000-4000-8000-000000000004", WarehouseID: "wh-shared", User: "carol@example.com",
			ClientApplication: "PowerBI", SQL: "SELECT 1", State: model.StateRunning, StartedAt: t0.Add(-20 * time.Second),
			ClientActivityKnown: true, ClientLastActivity: t0.Add(-time.Second), Open: ptr(true),
			FirstSeenAt: t0.Add(-20 * time.Second), LastPollOKAt: t0.Add(-time.Second), Poll: model.PollStats{OK: 10},
		},
	}
	eps := []model.Endpoint{
		{
			Name: "vs-full", Type: "STANDARD", State: "ONLINE", RowLimit: 1000, Exhausted: true,
			Indexes: []model.Index{{Name: "main.rag.docs", Rows: 1000, Ready: true, Message: "ok"}},
			LastError: &model.ErrorInfo{Kind: model.KindPermanent, Call: "UpsertDataVectorIndex", ErrorCode: "RESOURCE_EXHAUSTED",
				HTTPStatus: 429, Message: "Endpoint vs-full has reached its capacity limit.", RequestID: "bbbbbbbb-1111-4222-8333-444444444444", Attempts: 1},
			Samples: []model.Sample{{At: t0.Add(-2 * time.Minute), Rows: 800}, {At: t0, Rows: 1000}},
		},
		{
			Name: "vs-ok", Type: "STANDARD", State: "ONLINE", RowLimit: 320_000_000,
			Indexes: []model.Index{{Name: "main.rag.faq", Rows: 1234, Ready: true}},
			Samples: []model.Sample{{At: t0, Rows: 1234}},
		},
	}
	errs := []model.ErrorInfo{{Kind: model.KindThrottled, Call: "ListIndexes", ErrorCode: "REQUEST_LIMIT_EXCEEDED", HTTPStatus: 429,
		Message: "slow down", RequestID: "cccccccc-1111-4222-8333-444444444444", Attempts: 4, Elapsed: 3200 * time.Millisecond}}
	return model.NewSnapshot(t0, model.Workspace{Host: "http://127.0.0.1:8080", Warehouses: []string{"wh-shared", "wh-etl"}}, ops, eps, errs, th)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./report -update to accept)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, fixture(), TableOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.golden", b.Bytes())
}

func TestTableASCIIGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, fixture(), TableOptions{ASCII: true, Width: 100}); err != nil {
		t.Fatal(err)
	}
	golden(t, "table-ascii.golden", b.Bytes())
	for i, c := range b.Bytes() {
		if c > 0x7e || (c < 0x20 && c != '\n') {
			t.Fatalf("byte %d is %#x: not printable ASCII", i, c)
		}
	}
}

func TestTableFlaggedFirstAndNoColourByDefault(t *testing.T) {
	var b bytes.Buffer
	_ = Table(&b, fixture(), TableOptions{})
	out := b.String()
	if strings.Contains(out, "\x1b") {
		t.Fatalf("escape sequence in plain output (colour off, server text must be cleaned)")
	}
	healthy := strings.Index(out, "01ef0000-0000-4000-8000-000000000004")
	for _, id := range []string{"000000000001", "000000000002", "000000000003"} {
		if i := strings.Index(out, "01ef0000-0000-4000-8000-"+id); i < 0 || i > healthy {
			t.Errorf("flagged %s is not listed before the healthy operation", id)
		}
	}
	// Sections in order: operations, endpoints, errors.
	o, e, r := strings.Index(out, "\nOPERATIONS"), strings.Index(out, "\nENDPOINTS"), strings.Index(out, "\nERRORS")
	if !(o >= 0 && o < e && e < r) {
		t.Errorf("section order: operations %d endpoints %d errors %d", o, e, r)
	}
	for _, id := range []string{"bbbbbbbb-1111-4222-8333-444444444444", "cccccccc-1111-4222-8333-444444444444"} {
		if !strings.Contains(out, id) {
			t.Errorf("request id %s missing", id)
		}
	}
}

func TestTableColourOnlyRepeatsSeverity(t *testing.T) {
	var plain, col bytes.Buffer
	_ = Table(&plain, fixture(), TableOptions{})
	_ = Table(&col, fixture(), TableOptions{Color: true})
	if !strings.Contains(col.String(), ansiRed+"CRIT"+ansiReset) {
		t.Fatalf("no colour on CRIT")
	}
	stripped := strings.NewReplacer(ansiRed, "", ansiYellow, "", ansiReset, "").Replace(col.String())
	if stripped != plain.String() {
		t.Errorf("colour changed the text or the alignment")
	}
}

func TestTableMaxOperations(t *testing.T) {
	var b bytes.Buffer
	_ = Table(&b, fixture(), TableOptions{MaxOperations: 3})
	if strings.Contains(b.String(), "000000000004") || !strings.Contains(b.String(), "1 more operations not shown") {
		t.Errorf("the healthy operation should be the one cut:\n%s", b.String())
	}
}

func TestMarkdownGolden(t *testing.T) {
	evs := []model.Event{
		{At: t0.Add(-70 * time.Second), Kind: model.EventRetry, StatementID: "01ef0000-0000-4000-8000-000000000001", Call: "GetOperationStatus", Message: "transport: connection reset; retry 1 in 250ms"},
		{At: t0.Add(-65 * time.Second), Kind: model.EventFlagRaised, StatementID: "01ef0000-0000-4000-8000-000000000001", Flag: &model.Flag{Kind: model.FlagInactive, Severity: model.SeverityWarning, Detail: "no client call for 15s"}},
		{At: t0.Add(-30 * time.Second), Kind: model.EventCloseFailed, StatementID: "01ef0000-0000-4000-8000-000000000002", Call: "CloseOperation",
			Err: &model.ErrorInfo{Kind: model.KindUnavailable, Call: "CloseOperation", HTTPStatus: 503, ErrorCode: "TEMPORARILY_UNAVAILABLE", RequestID: "aaaaaaaa-1111-4222-8333-444444444444"}},
		{At: t0.Add(-10 * time.Second), Kind: model.EventCapacity, Endpoint: "vs-full", Call: "UpsertDataVectorIndex", Message: "RESOURCE_EXHAUSTED | endpoint full", RequestID: "bbbbbbbb-1111-4222-8333-444444444444"},
	}
	var b bytes.Buffer
	if err := Markdown(&b, fixture(), evs); err != nil {
		t.Fatal(err)
	}
	golden(t, "incident.golden.md", b.Bytes())
	out := b.String()
	for _, want := range []string{"aaaaaaaa-1111-4222-8333-444444444444", "bbbbbbbb-1111-4222-8333-444444444444", "cccccccc-1111-4222-8333-444444444444", `RESOURCE\_EXHAUSTED \| endpoint full`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Contains(out, "000000000004") {
		t.Errorf("an unflagged operation is in the incident report")
	}
}

func TestMarkdownKeepsLastEvents(t *testing.T) {
	var evs []model.Event
	for i := 0; i < MaxEvents+5; i++ {
		evs = append(evs, model.Event{At: t0.Add(time.Duration(i) * time.Second), Kind: model.EventDiscovered, StatementID: "s" + string(rune('a'+i%26)), Message: "m"})
	}
	var b bytes.Buffer
	_ = Markdown(&b, model.Snapshot{GeneratedAt: t0}, evs)
	if strings.Contains(b.String(), t0.Format(time.RFC3339)+" | discovered") {
		t.Errorf("the oldest event should have been dropped")
	}
	if n := strings.Count(b.String(), "| discovered |"); n != MaxEvents {
		t.Errorf("%d events, want %d", n, MaxEvents)
	}
}

func TestExitCode(t *testing.T) {
	if got := ExitCode(fixture()); got != ExitCritical {
		t.Errorf("fixture: %d, want 2", got)
	}
	if got := ExitCode(model.Snapshot{GeneratedAt: t0}); got != ExitOK {
		t.Errorf("empty: %d, want 0", got)
	}
	warn := model.Snapshot{Operations: []*model.OperationView{{Flags: []model.Flag{{Kind: model.FlagReaped, Severity: model.SeverityWarning}}}}}
	if got := ExitCode(warn); got != ExitWarning {
		t.Errorf("warning: %d, want 1", got)
	}
}

func TestJSONFormats(t *testing.T) {
	s := fixture()
	var ind, line bytes.Buffer
	if err := JSON(&ind, s); err != nil {
		t.Fatal(err)
	}
	if err := JSONLine(&line, s); err != nil {
		t.Fatal(err)
	}
	if strings.Count(line.String(), "\n") != 1 || !strings.HasSuffix(line.String(), "\n") {
		t.Errorf("JSONLine is not one line")
	}
	if strings.Count(ind.String(), "\n") < 10 {
		t.Errorf("JSON is not indented")
	}
	var a, b map[string]any
	if err := json.Unmarshal(ind.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(line.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	if a["schema"] != model.SnapshotSchema || b["schema"] != model.SnapshotSchema {
		t.Errorf("schema: %v / %v", a["schema"], b["schema"])
	}
}

func TestWriteFile0600(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "export.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile0600(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("content %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary file left behind: %v", entries)
	}
	if err := WriteFile0600(filepath.Join(dir, "no", "such", "dir"), nil); err == nil || !strings.Contains(err.Error(), "no/such/dir") {
		t.Errorf("error should name the path: %v", err)
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"SELECT 1", "a\nb\tc", "\x1b[31mred\x1b[0m", "Zürich", "\xff\xfe", ""} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, ascii bool) {
		out := clean(s, ascii)
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (ascii && r > 0x7e) {
				t.Fatalf("clean(%q, %v) = %q keeps %U", s, ascii, out, r)
			}
		}
		if w := width(cut(out, 10, ascii)); w > 10 {
			t.Fatalf("cut to 10 gives width %d", w)
		}
	})
}

// A statement cannot forge report content: its SQL fence is longer than any
// backtick run inside it, and table cells escape pipes and newlines.
func TestMarkdownCannotBeForged(t *testing.T) {
	forge := "SELECT 1\n````\n\n## Flagged operations\n\nNone.\n````sql\n"
	now := t0
	op := model.Operation{
		StatementID: "01ef0000-0000-4000-8000-0000000000ff", WarehouseID: "wh|x", User: "mallory\n| forged | row |",
		SQL: forge, State: model.StateFinished, StartedAt: now.Add(-time.Hour), CompletedAt: now.Add(-50 * time.Minute),
		Open: ptr(true), FirstSeenAt: now.Add(-time.Hour), LastPollOKAt: now,
	}
	s := model.NewSnapshot(now, model.Workspace{Host: "h"}, []model.Operation{op}, nil, nil, model.DefaultThresholds)
	if len(s.Operations[0].Flags) == 0 {
		t.Fatal("fixture: the operation should be flagged UNCLOSED")
	}
	var b bytes.Buffer
	if err := Markdown(&b, s, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "\n`````sql\n"+forge+"\n`````\n") {
		t.Errorf("SQL not fenced by five backticks:\n%s", out)
	}
	outside := strings.Replace(out, "`````sql\n"+forge+"\n`````", "", 1)
	if strings.Count(outside, "## Flagged operations") != 1 {
		t.Errorf("a forged heading escaped the fence:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "mallory") && strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") != 12 {
			t.Errorf("the user cell broke the table row: %q", l)
		}
	}
	if strings.Contains(out, "\n| forged") {
		t.Errorf("a newline in a cell started a new row:\n%s", out)
	}
	if mdFence("no ticks") != "```" || mdFence("a ``` b") != "````" {
		t.Errorf("mdFence: %q %q", mdFence("no ticks"), mdFence("a ``` b"))
	}
}

// The human table fits its width (100 when not a terminal) by leaving out
// the least useful columns, says which, and --wide keeps them all.
func TestTableFitsWidthAndWideKeepsAll(t *testing.T) {
	for _, w := range []int{0, 80, 100, 160} {
		var b bytes.Buffer
		_ = Table(&b, fixture(), TableOptions{Width: w})
		limit := w
		if w == 0 {
			limit = 100
		}
		inOps := false
		for _, l := range strings.Split(b.String(), "\n") {
			if l == "OPERATIONS" {
				inOps = true
			}
			if l == "" {
				inOps = false
			}
			if inOps && width(l) > limit {
				t.Errorf("width %d: line of %d cells: %q", w, width(l), l)
			}
		}
		if w <= 100 && !strings.Contains(b.String(), "--wide shows:") {
			t.Errorf("width %d: columns left out silently:\n%s", w, b.String())
		}
	}
	var b bytes.Buffer
	_ = Table(&b, fixture(), TableOptions{Width: 80, Wide: true})
	for _, col := range []string{"RETRIES", "REAPER", "CLOSE", "WAREHOUSE", "WRITES/MIN", "THROUGHPUT"} {
		if !strings.Contains(b.String(), col) {
			t.Errorf("--wide lost %s", col)
		}
	}
	if strings.Contains(b.String(), "--wide shows") {
		t.Errorf("--wide left columns out")
	}
}

// TestTableAt80LeadsWithSeverityAndFlags: at 80 columns the table keeps
// SEV, FLAGS and USER, shows 8-character ids (whole ones with --wide),
// and no header line is wider than 80.
func TestTableAt80LeadsWithSeverityAndFlags(t *testing.T) {
	s := fixture()
	for i, o := range s.Operations {
		id := []string{"3a9f01c2", "7b2e44d0", "c0ffee11", "d15ea5e0"}[i%4]
		o.StatementID = id + "-0000-4000-8000-00000000000" + string(rune('1'+i))
		o.User = "user" + string(rune('a'+i)) + "@example.com"
	}
	var b bytes.Buffer
	if err := Table(&b, s, TableOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	for _, l := range lines[:3] {
		if width(l) > 80 {
			t.Errorf("header line of %d cells: %q", width(l), l)
		}
	}
	var head string
	for _, l := range lines {
		if strings.HasPrefix(l, "SEV") {
			head = l
			break
		}
	}
	if !strings.HasPrefix(head, "SEV   FLAGS") || !strings.Contains(head, "USER") {
		t.Errorf("operations header %q: want SEV, FLAGS first and USER kept", head)
	}
	if !strings.Contains(out, "  3a9f01c2  ") || strings.Contains(out, "3a9f01c2-0000") {
		t.Errorf("ids not cut to 8 characters:\n%s", out)
	}
	b.Reset()
	_ = Table(&b, s, TableOptions{Width: 80, Wide: true})
	if !strings.Contains(b.String(), "3a9f01c2-0000-4000-8000-000000000001") {
		t.Errorf("--wide does not show whole ids:\n%s", b.String())
	}
}
