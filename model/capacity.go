package model

import (
	"fmt"
	"math"
	"time"

	"github.com/dbxtop/dbxtop/textfmt"
)

// RowLimitTag is the Vector Search endpoint custom tag whose integer value
// overrides the per-type row limit (the source parses it).
const RowLimitTag = "dbxtop_row_limit"

// growthWindow bounds the samples used for the growth rate: recent enough
// to follow an ingest burst, long enough to smooth one noisy sample.
const growthWindow = 10 * time.Minute

const (
	capacityWarn     = 0.80
	capacityCritical = 0.95
)

// DefaultRowLimit is the published capacity of an endpoint type (about
// 320M 768-dim vectors for STANDARD, 1B for STORAGE_OPTIMIZED). No API
// reports it; 0 means unknown.
func DefaultRowLimit(endpointType string) int64 {
	switch endpointType {
	case "STANDARD":
		return 320_000_000
	case "STORAGE_OPTIMIZED":
		return 1_000_000_000
	}
	return 0
}

// TotalRows is the endpoint's total indexed row count.
func (ep Endpoint) TotalRows() int64 {
	var n int64
	for _, ix := range ep.Indexes {
		n += ix.Rows
	}
	return n
}

// UsageRatio is TotalRows / RowLimit; ok is false when the limit is unknown.
func (ep Endpoint) UsageRatio() (usage float64, ok bool) {
	if ep.RowLimit <= 0 {
		return 0, false
	}
	return float64(ep.TotalRows()) / float64(ep.RowLimit), true
}

// GrowthRate is the row growth rate between the oldest and newest sample
// of the last ten minutes before now (0 with fewer than two samples).
func (ep Endpoint) GrowthRate(now time.Time) float64 {
	var oldest, newest *Sample
	for i := range ep.Samples {
		s := &ep.Samples[i]
		if s.At.After(now) || now.Sub(s.At) > growthWindow {
			continue
		}
		if oldest == nil || s.At.Before(oldest.At) {
			oldest = s
		}
		if newest == nil || !s.At.Before(newest.At) {
			newest = s
		}
	}
	if oldest == nil || !newest.At.After(oldest.At) {
		return 0
	}
	return float64(newest.Rows-oldest.Rows) / newest.At.Sub(oldest.At).Minutes()
}

// TimeToFull is the estimated time until Rows reaches RowLimit at the
// current growth rate; nil when the endpoint is not growing, the limit is
// unknown, or the estimate exceeds what a time.Duration holds (~292 years).
// A full endpoint that still grows has ETA zero.
func (ep Endpoint) TimeToFull(now time.Time) *time.Duration {
	rate := ep.GrowthRate(now)
	if rate <= 0 || ep.RowLimit <= 0 {
		return nil
	}
	left := ep.RowLimit - ep.TotalRows()
	if left <= 0 {
		d := time.Duration(0)
		return &d
	}
	ns := float64(left) / rate * float64(time.Minute)
	if ns >= math.MaxInt64 {
		return nil
	}
	d := time.Duration(ns)
	return &d
}

// EvaluateEndpoint raises CAPACITY (warning ≥ 80 %, critical ≥ 95 % of the
// row limit) and EXHAUSTED (critical: the server refused with
// RESOURCE_EXHAUSTED / QUOTA_EXCEEDED, or usage ≥ 100 %). Without a row
// limit there is no CAPACITY flag, but EXHAUSTED still comes from the
// server's answer.
func EvaluateEndpoint(ep Endpoint, now time.Time) []Flag {
	var flags []Flag
	usage, known := ep.UsageRatio()
	if known && usage >= capacityWarn {
		sev := SeverityWarning
		if usage >= capacityCritical {
			sev = SeverityCritical
		}
		d := fmt.Sprintf("%.1f%% of the %s-row limit (%s rows)", usage*100, textfmt.Count(ep.RowLimit), textfmt.Count(ep.TotalRows()))
		if eta := ep.TimeToFull(now); eta != nil {
			d += fmt.Sprintf("; full in %s at %s rows/min", textfmt.Duration(*eta), textfmt.Count(int64(math.Round(ep.GrowthRate(now)))))
		}
		flags = append(flags, Flag{Kind: FlagCapacity, Severity: sev, Detail: d})
	}
	if ep.Exhausted || (known && usage >= 1) {
		var d string
		switch {
		case ep.Exhausted && ep.LastError != nil:
			d = "server refused writes: " + ep.LastError.String()
		case ep.Exhausted:
			d = "server refused writes (RESOURCE_EXHAUSTED)"
		default:
			d = fmt.Sprintf("usage %.1f%% of the %s-row limit", usage*100, textfmt.Count(ep.RowLimit))
		}
		flags = append(flags, Flag{Kind: FlagExhausted, Severity: SeverityCritical, Detail: d})
	}
	return flags
}

// NewEndpointView derives an endpoint's capacity figures and flags at now.
func NewEndpointView(ep Endpoint, now time.Time) EndpointView {
	usage, _ := ep.UsageRatio()
	return EndpointView{
		Endpoint:     ep,
		Rows:         ep.TotalRows(),
		Usage:        usage,
		GrowthPerMin: ep.GrowthRate(now),
		ETAFull:      ep.TimeToFull(now),
		Flags:        EvaluateEndpoint(ep, now),
	}
}
