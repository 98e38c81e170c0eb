package model

import (
	"strings"
	"testing"
	"time"
)

func endpointAt(rows, limit int64) Endpoint {
	return Endpoint{Name: "vs-1", Type: "STANDARD", RowLimit: limit,
		Indexes: []Index{{Name: "a", Rows: rows / 2, Ready: true}, {Name: "b", Rows: rows - rows/2, Ready: true}}}
}

func TestCapacityBoundaries(t *testing.T) {
	const limit = 1_000_000
	cases := []struct {
		rows      int64
		capacity  Severity
		exhausted bool
	}{
		{0, SeverityNone, false},
		{799_999, SeverityNone, false},
		{800_000, SeverityWarning, false},
		{800_001, SeverityWarning, false},
		{949_999, SeverityWarning, false},
		{950_000, SeverityCritical, false},
		{950_001, SeverityCritical, false},
		{999_999, SeverityCritical, false},
		{1_000_000, SeverityCritical, true},
		{1_000_001, SeverityCritical, true},
	}
	for _, c := range cases {
		flags := EvaluateEndpoint(endpointAt(c.rows, limit), t0)
		if got := flagOf(flags, FlagCapacity).Severity; got != c.capacity {
			t.Errorf("rows %d: CAPACITY %q, want %q", c.rows, got, c.capacity)
		}
		ex := flagOf(flags, FlagExhausted)
		if (ex.Kind != "") != c.exhausted || (c.exhausted && ex.Severity != SeverityCritical) {
			t.Errorf("rows %d: EXHAUSTED %+v, want raised=%v critical", c.rows, ex, c.exhausted)
		}
	}
}

func TestExhaustedFromServer(t *testing.T) {
	ep := endpointAt(10, 1_000_000)
	ep.Exhausted = true
	ep.LastError = &ErrorInfo{Kind: KindPermanent, Call: "UpsertDataVectorIndex", HTTPStatus: 429,
		ErrorCode: "RESOURCE_EXHAUSTED", Message: "Endpoint is full", RequestID: "9f1c"}
	flags := EvaluateEndpoint(ep, t0)
	f := flagOf(flags, FlagExhausted)
	if f.Severity != SeverityCritical {
		t.Fatalf("EXHAUSTED %+v", f)
	}
	for _, want := range []string{"RESOURCE_EXHAUSTED", "Endpoint is full", "9f1c"} {
		if !strings.Contains(f.Detail, want) {
			t.Errorf("detail %q lacks %q", f.Detail, want)
		}
	}
	if flagOf(flags, FlagCapacity).Kind != "" {
		t.Error("CAPACITY raised at 0% usage")
	}
}

func TestUnknownRowLimit(t *testing.T) {
	for _, limit := range []int64{0, -5} {
		ep := endpointAt(5_000_000_000, limit)
		if _, ok := ep.UsageRatio(); ok {
			t.Errorf("limit %d: usage reported as known", limit)
		}
		if flags := EvaluateEndpoint(ep, t0); len(flags) != 0 {
			t.Errorf("limit %d: flags %+v without a limit", limit, flags)
		}
		ep.Exhausted = true
		if f := flagOf(EvaluateEndpoint(ep, t0), FlagExhausted); f.Kind == "" {
			t.Errorf("limit %d: the server's RESOURCE_EXHAUSTED must still be flagged", limit)
		}
	}
}

func TestDefaultRowLimit(t *testing.T) {
	cases := map[string]int64{"STANDARD": 320_000_000, "STORAGE_OPTIMIZED": 1_000_000_000, "": 0, "standard": 0, "OTHER": 0}
	for typ, want := range cases {
		if got := DefaultRowLimit(typ); got != want {
			t.Errorf("DefaultRowLimit(%q) = %d, want %d", typ, got, want)
		}
	}
	if RowLimitTag != "dbxtop_row_limit" {
		t.Errorf("RowLimitTag %q", RowLimitTag)
	}
}

func TestGrowthRateAndETA(t *testing.T) {
	ep := endpointAt(600_000, 1_000_000)
	ep.Samples = []Sample{
		{At: t0.Add(-40 * time.Minute), Rows: 0},       // outside the window: ignored
		{At: t0.Add(-20 * time.Minute), Rows: 200_000}, // oldest within
		{At: t0.Add(-10 * time.Minute), Rows: 400_000}, // 20,000/min for 10 min
		{At: t0.Add(-5 * time.Minute), Rows: 500_000},  // 20,000/min for 5 min
		{At: t0, Rows: 600_000},                        // 20,000/min for 5 min
		{At: t0.Add(time.Minute), Rows: 9_000_000},     // in the future: ignored
	}
	if got := ep.GrowthRate(t0); got != 20_000 {
		t.Errorf("growth %v rows/min, want 20000", got)
	}
	eta := ep.TimeToFull(t0)
	if eta == nil || *eta != 20*time.Minute {
		t.Errorf("ETA %v, want 20m", eta)
	}
	v := NewEndpointView(ep, t0)
	if v.Rows != 600_000 || v.Usage != 0.6 || v.GrowthPerMin != 20_000 || v.WriteRowsPerMin != 20_000 || v.ETAFull == nil {
		t.Errorf("view %+v", v)
	}
}

// TestForecastWindows: the growth rate behind the time to full is the
// duration-weighted median over ForecastWindow, so one bulk load does not
// move it; the write rate is the plain net rate of WriteRateWindow.
func TestForecastWindows(t *testing.T) {
	steady := func(from, to time.Duration, step time.Duration, rate int64, start int64) []Sample {
		var out []Sample
		rows := start
		for at := from; at <= to; at += step {
			out = append(out, Sample{At: t0.Add(at), Rows: rows})
			rows += rate * int64(step/time.Minute)
		}
		return out
	}
	cases := []struct {
		name         string
		samples      []Sample
		growth, rate float64
	}{
		{"steady 1,000/min for 30 min", steady(-30*time.Minute, 0, time.Minute, 1_000, 0), 1_000, 1_000},
		{"bulk load of 500,000 in one minute among steady writes", func() []Sample {
			s := steady(-20*time.Minute, 0, time.Minute, 1_000, 0)
			for i := range s {
				if s[i].At.After(t0.Add(-3 * time.Minute)) {
					s[i].Rows += 500_000
				}
			}
			return s
		}(), 1_000, (5_000 + 500_000) / 5.0},
		{"deletes then steady growth", append([]Sample{{At: t0.Add(-12 * time.Minute), Rows: 900_000}},
			steady(-11*time.Minute, 0, time.Minute, 2_000, 100_000)...), 2_000, 2_000},
		{"only samples older than the window", steady(-60*time.Minute, -31*time.Minute, time.Minute, 1_000, 0), 0, 0},
		{"write rate window only", steady(-4*time.Minute, 0, time.Minute, 300, 0), 300, 300},
		{"shrinking", steady(-10*time.Minute, 0, time.Minute, -100, 10_000), -100, -100},
		{"one sample", []Sample{{At: t0, Rows: 5}}, 0, 0},
	}
	for _, c := range cases {
		ep := endpointAt(600_000, 1_000_000)
		ep.Samples = c.samples
		if got := ep.GrowthRate(t0); got != c.growth {
			t.Errorf("%s: growth %v, want %v", c.name, got, c.growth)
		}
		if got := ep.WriteRate(t0); got != c.rate {
			t.Errorf("%s: write rate %v, want %v", c.name, got, c.rate)
		}
	}
}

func TestAppendSampleBoundsHistory(t *testing.T) {
	var s []Sample
	// One sample every 5 s for an hour.
	for i := 0; i <= 720; i++ {
		s = AppendSample(s, Sample{At: t0.Add(time.Duration(i) * 5 * time.Second), Rows: int64(i)})
	}
	end := t0.Add(time.Hour)
	if n := len(s); n > 150 {
		t.Errorf("%d samples kept, want a bounded history", n)
	}
	if s[len(s)-1].At != end {
		t.Errorf("newest %v, want %v", s[len(s)-1].At, end)
	}
	if age := end.Sub(s[0].At); age > ForecastWindow || age < ForecastWindow-sampleStep {
		t.Errorf("oldest is %v old, want about %v", age, ForecastWindow)
	}
	for i := 1; i < len(s); i++ {
		gap := s[i].At.Sub(s[i-1].At)
		if end.Sub(s[i].At) > fullResolution && gap < sampleStep {
			t.Errorf("sample %d: %v after the previous one, beyond full resolution", i, gap)
		}
		if end.Sub(s[i-1].At) <= fullResolution && gap != 5*time.Second {
			t.Errorf("sample %d: gap %v within full resolution", i, gap)
		}
	}
}

func TestNotGrowing(t *testing.T) {
	cases := map[string][]Sample{
		"no samples":   nil,
		"one sample":   {{At: t0, Rows: 5}},
		"same instant": {{At: t0, Rows: 5}, {At: t0, Rows: 50}},
		"flat":         {{At: t0.Add(-time.Minute), Rows: 5}, {At: t0, Rows: 5}},
		"shrinking":    {{At: t0.Add(-time.Minute), Rows: 50}, {At: t0, Rows: 5}},
		"all too old":  {{At: t0.Add(-time.Hour), Rows: 1}, {At: t0.Add(-30 * time.Minute), Rows: 500}},
	}
	for name, s := range cases {
		ep := endpointAt(100, 1000)
		ep.Samples = s
		if eta := ep.TimeToFull(t0); eta != nil {
			t.Errorf("%s: ETA %v, want nil", name, *eta)
		}
	}
	// Full and still growing: ETA zero, not nil.
	ep := endpointAt(2000, 1000)
	ep.Samples = []Sample{{At: t0.Add(-time.Minute), Rows: 1000}, {At: t0, Rows: 2000}}
	if eta := ep.TimeToFull(t0); eta == nil || *eta != 0 {
		t.Errorf("full endpoint ETA %v, want 0", eta)
	}
	// Unknown limit: no ETA even when growing.
	ep.RowLimit = 0
	if eta := ep.TimeToFull(t0); eta != nil {
		t.Errorf("unknown limit ETA %v", *eta)
	}
}

func TestCapacityDetailMentionsETA(t *testing.T) {
	ep := endpointAt(900_000, 1_000_000)
	ep.Samples = []Sample{{At: t0.Add(-time.Minute), Rows: 890_000}, {At: t0, Rows: 900_000}}
	f := flagOf(EvaluateEndpoint(ep, t0), FlagCapacity)
	if want := "90.0% of the 1,000,000-row limit (900,000 rows); full in 10m00s at 10,000 rows/min"; f.Detail != want {
		t.Errorf("detail %q, want %q", f.Detail, want)
	}
}
