package model

import (
	"strings"
	"testing"
	"time"
)

func da(rows int64) Index { return Index{Name: "da", Type: IndexDirectAccess, Rows: rows, Ready: true} }
func ds(rows int64, dim int) Index {
	return Index{Name: "ds", Type: IndexDeltaSync, Dimension: dim, Rows: rows, Ready: true}
}

// TestResolveRowLimit: endpoint type × index types × dimension × the
// overrides (config, tag) × learned, with the source and the reason.
func TestResolveRowLimit(t *testing.T) {
	learnedAt := time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)
	learned := &LearnedLimit{Rows: 1_984_112, At: learnedAt}
	seven := make([]Index, 7)
	for i := range seven {
		seven[i] = da(280_000)
	}
	cases := []struct {
		name   string
		ep     Endpoint
		limit  int64
		source LimitSource
		why    string // exact reason
	}{
		{"the incident: 7 Direct Access on STANDARD", Endpoint{Type: EndpointStandard, Indexes: seven},
			2_000_000, LimitPublished, "≈2 M: Direct Access on STANDARD, published figure"},
		{"Delta Sync on STANDARD at 768", Endpoint{Type: EndpointStandard, Indexes: []Index{ds(5, 768)}},
			320_000_000, LimitPublished, "≈320 M: Delta Sync (768 dims) on STANDARD, published figure"},
		{"Delta Sync on STANDARD at 1536 halves the figure", Endpoint{Type: EndpointStandard, Indexes: []Index{ds(5, 1536)}},
			160_000_000, LimitPublished, "≈160 M: Delta Sync (1536 dims, scaled from 320 M at 768) on STANDARD, published figure"},
		{"Delta Sync, dimension unknown", Endpoint{Type: EndpointStandard, Indexes: []Index{ds(5, 0)}},
			320_000_000, LimitPublished, "≈320 M: Delta Sync (dimension unknown, 768 assumed) on STANDARD, published figure"},
		{"STORAGE_OPTIMIZED Delta Sync at 1024", Endpoint{Type: EndpointStorageOptimized, Indexes: []Index{ds(5, 1024)}},
			750_000_000, LimitPublished, "≈750 M: Delta Sync (1024 dims, scaled from 1 B at 768) on STORAGE_OPTIMIZED, published figure"},
		{"STORAGE_OPTIMIZED Direct Access at 768", Endpoint{Type: EndpointStorageOptimized, Indexes: []Index{{Type: IndexDirectAccess, Dimension: 768}}},
			1_000_000_000, LimitPublished, "≈1 B: Direct Access (768 dims) on STORAGE_OPTIMIZED, published figure"},
		{"STANDARD without indexes", Endpoint{Type: EndpointStandard},
			320_000_000, LimitPublished, "≈320 M: STANDARD with no indexes, Delta Sync figure at 768 dims, published figure"},
		{"mixed, weighted by rows: 1 M DA + 160 M DS is 100 %", Endpoint{Type: EndpointStandard, Indexes: []Index{da(1_000_000), ds(160_000_000, 768)}},
			161_000_000, LimitPublished, "≈161 M: 1 Direct Access ≈2 M + 1 Delta Sync (768 dims) ≈320 M on STANDARD, published figures, weighted by each kind's rows"},
		{"mixed and empty: the smallest", Endpoint{Type: EndpointStandard, Indexes: []Index{da(0), ds(0, 768)}},
			2_000_000, LimitPublished, "≈2 M: 1 Direct Access ≈2 M + 1 Delta Sync (768 dims) ≈320 M on STANDARD, published figures; the smallest applies while the endpoint is empty"},
		{"unknown type: no limit", Endpoint{Type: "FUTURE_TYPE", Indexes: []Index{da(5)}},
			0, LimitNone, `no published figure for endpoint type "FUTURE_TYPE"; set one in the config file or the dbxtop_row_limit tag`},
		{"unknown type with a tag", Endpoint{Type: "FUTURE_TYPE", TagLimit: 5_000_000},
			5_000_000, LimitTag, "5,000,000: endpoint tag dbxtop_row_limit"},
		{"tag over published", Endpoint{Type: EndpointStandard, Indexes: seven, TagLimit: 3_000_000},
			3_000_000, LimitTag, "3,000,000: endpoint tag dbxtop_row_limit (over the published ≈2 M)"},
		{"config over tag", Endpoint{Type: EndpointStandard, Indexes: seven, TagLimit: 3_000_000, ConfigLimit: 2_500_000},
			2_500_000, LimitConfig, "2,500,000: config file (over the tag 3,000,000)"},
		{"learned over published", Endpoint{Type: EndpointStandard, Indexes: seven, Learned: learned},
			1_984_112, LimitLearned, "limit learned 2026-11-30 14:02 UTC from RESOURCE_EXHAUSTED at 1,984,112 rows (over the published ≈2 M)"},
		{"learned over config and tag", Endpoint{Type: EndpointStandard, Indexes: seven, TagLimit: 3_000_000, ConfigLimit: 2_500_000, Learned: learned},
			1_984_112, LimitLearned, "limit learned 2026-11-30 14:02 UTC from RESOURCE_EXHAUSTED at 1,984,112 rows (over the config 2,500,000)"},
		{"a zero learned figure is ignored", Endpoint{Type: EndpointStandard, Indexes: seven, Learned: &LearnedLimit{At: learnedAt}},
			2_000_000, LimitPublished, "≈2 M: Direct Access on STANDARD, published figure"},
	}
	for _, c := range cases {
		n, src, why := ResolveRowLimit(c.ep)
		if n != c.limit || src != c.source || why != c.why {
			t.Errorf("%s:\n got %d %q %q\nwant %d %q %q", c.name, n, src, why, c.limit, c.source, c.why)
		}
		ep := c.ep.WithRowLimit()
		if ep.RowLimit != n || ep.RowLimitSource != src || ep.RowLimitWhy != why {
			t.Errorf("%s: WithRowLimit disagrees with ResolveRowLimit", c.name)
		}
	}
}

// TestIncidentUsage: on the incident's endpoint the published figure
// puts 1.96 M rows at 98 % (critical), where the per-type figure of 320 M
// said 0.6 %.
func TestIncidentUsage(t *testing.T) {
	seven := make([]Index, 7)
	for i := range seven {
		seven[i] = da(280_000)
	}
	ep := Endpoint{Name: "vs-endpoint-1", Type: EndpointStandard, Indexes: seven}.WithRowLimit()
	u, ok := ep.UsageRatio()
	if !ok || u < 0.97 || u > 0.99 {
		t.Fatalf("usage %v %v", u, ok)
	}
	f := flagOf(EvaluateEndpoint(ep, t0), FlagCapacity)
	if f.Severity != SeverityCritical || !strings.Contains(f.Detail, "published limit") {
		t.Errorf("flag %+v", f)
	}
}

func TestUpdateLearned(t *testing.T) {
	t1 := t0.Add(time.Hour)
	prev := &LearnedLimit{Rows: 1_984_112, At: t0}
	cases := []struct {
		name      string
		prev      *LearnedLimit
		rows      int64
		exhausted bool
		want      *LearnedLimit
		outcome   LearnOutcome
	}{
		{"first refusal learns", nil, 1_984_112, true, &LearnedLimit{Rows: 1_984_112, At: t1, RequestID: "r"}, LearnNew},
		{"refusal at the same count keeps the first date", prev, 1_984_112, true, prev, LearnKeep},
		{"refusal at fewer rows (smaller quota) learns again", prev, 1_500_000, true, &LearnedLimit{Rows: 1_500_000, At: t1, RequestID: "r"}, LearnNew},
		{"rows above it: stale, forgotten", prev, 1_984_113, false, nil, LearnForget},
		{"rows below it after deletes: kept", prev, 1_000_000, false, prev, LearnKeep},
		{"at it, no refusal (no probe): kept", prev, 1_984_112, false, prev, LearnKeep},
		{"nothing learned, nothing refused", nil, 5, false, nil, LearnKeep},
		{"a refusal at zero rows teaches nothing", nil, 0, true, nil, LearnKeep},
	}
	for _, c := range cases {
		got, out := UpdateLearned(c.prev, c.rows, c.exhausted, "r", "", t1)
		if out != c.outcome || (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: got %+v %v, want %+v %v", c.name, got, out, c.want, c.outcome)
		}
	}
}

func TestEndpointTroubleFlags(t *testing.T) {
	pct := func(f float64) *float64 { return &f }
	many := make([]Index, 0, 50)
	for range 50 {
		many = append(many, da(1))
	}
	cases := []struct {
		name   string
		ep     Endpoint
		kind   FlagKind
		sev    Severity
		detail string
	}{
		{"online: no state flag", Endpoint{State: "ONLINE"}, FlagEndpointState, SeverityNone, ""},
		{"provisioning", Endpoint{State: "PROVISIONING", StateMessage: "Endpoint is being provisioned."}, FlagEndpointState, SeverityWarning, "state PROVISIONING: Endpoint is being provisioned."},
		{"yellow", Endpoint{State: "YELLOW_STATE"}, FlagEndpointState, SeverityWarning, "state YELLOW_STATE"},
		{"red", Endpoint{State: "RED_STATE", StateMessage: "Replica unhealthy"}, FlagEndpointState, SeverityCritical, "state RED_STATE: Replica unhealthy"},
		{"offline", Endpoint{State: "OFFLINE"}, FlagEndpointState, SeverityCritical, "state OFFLINE"},
		{"index not ready", Endpoint{Indexes: []Index{da(1), {Name: "b", Message: "Index is syncing"}}}, FlagIndexNotReady, SeverityWarning, "1 of 2 indexes not ready: b: Index is syncing"},
		{"many not ready", Endpoint{Indexes: []Index{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}}}, FlagIndexNotReady, SeverityWarning, "5 of 5 indexes not ready: a; b; c; and 2 more"},
		{"44 indexes: no quota flag", Endpoint{NumIndexes: 44}, FlagIndexQuota, SeverityNone, ""},
		{"45 indexes: warning", Endpoint{NumIndexes: 45}, FlagIndexQuota, SeverityWarning, "45 of 50 indexes per endpoint"},
		{"50 listed: critical", Endpoint{Indexes: many}, FlagIndexQuota, SeverityCritical, "50 of 50 indexes per endpoint: a new index is refused with 400 QUOTA_EXCEEDED"},
		{"the server's 400 QUOTA_EXCEEDED", Endpoint{LastError: &ErrorInfo{Kind: KindPermanent, Call: "CreateIndex", HTTPStatus: 400, ErrorCode: "QUOTA_EXCEEDED",
			Message: "Maximum number of indexes per endpoint exceeded for vector search endpoint vs. Current number of indexes 50 must be less than 50."}},
			FlagIndexQuota, SeverityCritical, "server refused: CreateIndex: permanent HTTP 400 QUOTA_EXCEEDED: Maximum number of indexes per endpoint exceeded for vector search endpoint vs. Current number of indexes 50 must be less than 50."},
		{"throughput 89 %", Endpoint{Throughput: pct(89)}, FlagThroughput, SeverityNone, ""},
		{"throughput 90 %", Endpoint{Throughput: pct(90)}, FlagThroughput, SeverityWarning, "concurrency utilisation 90%: queries and writes beyond it fail"},
		{"throughput 100 %", Endpoint{Throughput: pct(100)}, FlagThroughput, SeverityCritical, "concurrency utilisation 100%: queries and writes beyond it fail"},
	}
	for _, c := range cases {
		f := flagOf(EvaluateEndpoint(c.ep, t0), c.kind)
		if f.Severity != c.sev || f.Detail != c.detail {
			t.Errorf("%s: %+v, want %q %q", c.name, f, c.sev, c.detail)
		}
		if f.Kind == FlagExhausted {
			t.Errorf("%s: EXHAUSTED raised", c.name)
		}
	}
	// QUOTA_EXCEEDED is not a full endpoint.
	ep := Endpoint{LastError: &ErrorInfo{ErrorCode: "QUOTA_EXCEEDED"}}
	if flagOf(EvaluateEndpoint(ep, t0), FlagExhausted).Kind != "" {
		t.Error("QUOTA_EXCEEDED raised EXHAUSTED")
	}
}
