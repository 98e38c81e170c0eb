package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/textfmt"
)

// RowLimitTag is the Vector Search endpoint custom tag whose integer value
// overrides the published row limit (the source parses it).
const RowLimitTag = "dbxtop_row_limit"

// The forecast's windows (docs/capacity.md).
const (
	// ForecastWindow is how far back the growth rate behind the time to
	// full looks.
	ForecastWindow = 30 * time.Minute
	// WriteRateWindow is the window of the write rate shown next to it:
	// the net rows/min of the last five minutes, bulk loads included.
	WriteRateWindow = 5 * time.Minute
	// fullResolution keeps every sample this recent; older ones are thinned
	// to one per sampleStep.
	fullResolution = 10 * time.Minute
	sampleStep     = time.Minute
)

const (
	capacityWarn       = 0.80
	capacityCritical   = 0.95
	throughputWarn     = 90.0
	throughputCritical = 100.0
	// indexQuotaWarn: a warning this close to the per-endpoint index quota.
	indexQuotaWarn = IndexesPerEndpoint - 5
)

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

// AppendSample adds s to an endpoint's history and bounds it: every sample
// of the last ten minutes, one a minute before that, nothing older than
// the forecast window (about 50 samples however fast dbxtop refreshes).
func AppendSample(samples []Sample, s Sample) []Sample {
	out := make([]Sample, 0, len(samples)+1)
	for _, x := range append(samples[:len(samples):len(samples)], s) {
		age := s.At.Sub(x.At)
		if age > ForecastWindow || x.At.After(s.At) {
			continue
		}
		if n := len(out); n > 0 && age > fullResolution && x.At.Sub(out[n-1].At) < sampleStep {
			continue
		}
		out = append(out, x)
	}
	return out
}

// window returns the samples in (now-w, now], oldest first.
func (ep Endpoint) window(now time.Time, w time.Duration) []Sample {
	var in []Sample
	for _, s := range ep.Samples {
		if s.At.After(now) || now.Sub(s.At) > w {
			continue
		}
		in = append(in, s)
	}
	slices.SortStableFunc(in, func(a, b Sample) int { return a.At.Compare(b.At) })
	return in
}

// GrowthRate is the rows/min behind the time to full: the median of the
// rates between successive samples of the last ForecastWindow, each
// weighted by its duration. A one-off bulk load is one short interval, so
// it moves the median not at all, where a mean would turn one load into a
// false alarm or a false all-clear. 0 with fewer than two samples.
func (ep Endpoint) GrowthRate(now time.Time) float64 {
	in := ep.window(now, ForecastWindow)
	type iv struct{ rate, mins float64 }
	var ivs []iv
	var total float64
	for i := 1; i < len(in); i++ {
		d := in[i].At.Sub(in[i-1].At).Minutes()
		if d <= 0 {
			continue
		}
		ivs = append(ivs, iv{float64(in[i].Rows-in[i-1].Rows) / d, d})
		total += d
	}
	if len(ivs) == 0 {
		return 0
	}
	slices.SortFunc(ivs, func(a, b iv) int {
		switch {
		case a.rate < b.rate:
			return -1
		case a.rate > b.rate:
			return 1
		}
		return 0
	})
	var acc float64
	for i, x := range ivs {
		acc += x.mins
		if acc*2 > total {
			return x.rate
		}
		if acc*2 == total && i+1 < len(ivs) {
			return (x.rate + ivs[i+1].rate) / 2
		}
	}
	return ivs[len(ivs)-1].rate
}

// WriteRate is the net rows/min of the last WriteRateWindow, from its
// oldest to its newest sample (0 with fewer than two).
func (ep Endpoint) WriteRate(now time.Time) float64 {
	in := ep.window(now, WriteRateWindow)
	if len(in) < 2 || !in[len(in)-1].At.After(in[0].At) {
		return 0
	}
	return float64(in[len(in)-1].Rows-in[0].Rows) / in[len(in)-1].At.Sub(in[0].At).Minutes()
}

// TimeToFull is the estimated time until Rows reaches RowLimit at the
// growth rate; nil when the endpoint is not growing, the limit is unknown,
// or the estimate exceeds what a time.Duration holds (~292 years). A full
// endpoint that still grows has ETA zero.
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

// IndexCount is the endpoint's num_indexes, or the indexes listed when the
// server gave no count.
func (ep Endpoint) IndexCount() int { return max(ep.NumIndexes, len(ep.Indexes)) }

// EvaluateEndpoint raises the endpoint's flags (docs/capacity.md):
//   - CAPACITY: warning ≥ 80 %, critical ≥ 95 % of the row limit;
//   - EXHAUSTED (critical): the server refused writes with
//     RESOURCE_EXHAUSTED, or usage ≥ 100 %;
//   - ENDPOINT_STATE: not ONLINE (critical for RED_STATE, OFFLINE, DELETED);
//   - INDEX_NOT_READY (warning): indexes with ready=false, with the
//     server's message;
//   - INDEX_QUOTA: warning from 45 of the 50 indexes per endpoint,
//     critical at 50 or on the server's 400 QUOTA_EXCEEDED;
//   - THROUGHPUT: concurrency utilisation warning ≥ 90 %, critical ≥ 100 %.
//
// Without a row limit there is no CAPACITY flag, but EXHAUSTED still comes
// from the server's answer.
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
		if ep.RowLimitSource != LimitNone {
			d += "; " + string(ep.RowLimitSource) + " limit"
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
	if f, ok := stateFlag(ep); ok {
		flags = append(flags, f)
	}
	if f, ok := readinessFlag(ep); ok {
		flags = append(flags, f)
	}
	if f, ok := quotaFlag(ep); ok {
		flags = append(flags, f)
	}
	if t := ep.Throughput; t != nil && *t >= throughputWarn {
		sev := SeverityWarning
		if *t >= throughputCritical {
			sev = SeverityCritical
		}
		flags = append(flags, Flag{Kind: FlagThroughput, Severity: sev,
			Detail: fmt.Sprintf("concurrency utilisation %.0f%%: queries and writes beyond it fail", *t)})
	}
	return flags
}

func stateFlag(ep Endpoint) (Flag, bool) {
	if ep.State == "" || ep.State == "ONLINE" {
		return Flag{}, false
	}
	sev := SeverityWarning
	switch ep.State {
	case "RED_STATE", "OFFLINE", "DELETED":
		sev = SeverityCritical
	}
	d := "state " + textfmt.Line(ep.State)
	if ep.StateMessage != "" {
		d += ": " + textfmt.Line(ep.StateMessage)
	}
	return Flag{Kind: FlagEndpointState, Severity: sev, Detail: d}, true
}

// maxNotReadyListed bounds the indexes a readiness flag names.
const maxNotReadyListed = 3

func readinessFlag(ep Endpoint) (Flag, bool) {
	var names []string
	n := 0
	for _, ix := range ep.Indexes {
		if ix.Ready {
			continue
		}
		n++
		if len(names) < maxNotReadyListed {
			s := textfmt.Line(ix.Name)
			if ix.Message != "" {
				s += ": " + textfmt.Line(ix.Message)
			}
			names = append(names, s)
		}
	}
	if n == 0 {
		return Flag{}, false
	}
	d := fmt.Sprintf("%d of %d indexes not ready: %s", n, len(ep.Indexes), strings.Join(names, "; "))
	if n > len(names) {
		d += fmt.Sprintf("; and %d more", n-len(names))
	}
	return Flag{Kind: FlagIndexNotReady, Severity: SeverityWarning, Detail: d}, true
}

func quotaFlag(ep Endpoint) (Flag, bool) {
	if e := ep.LastError; e != nil && e.ErrorCode == "QUOTA_EXCEEDED" {
		return Flag{Kind: FlagIndexQuota, Severity: SeverityCritical, Detail: "server refused: " + e.String()}, true
	}
	n := ep.IndexCount()
	if n < indexQuotaWarn {
		return Flag{}, false
	}
	sev, d := SeverityWarning, fmt.Sprintf("%d of %d indexes per endpoint", n, IndexesPerEndpoint)
	if n >= IndexesPerEndpoint {
		sev, d = SeverityCritical, d+": a new index is refused with 400 QUOTA_EXCEEDED"
	}
	return Flag{Kind: FlagIndexQuota, Severity: sev, Detail: d}, true
}

// NewEndpointView derives an endpoint's capacity figures and flags at now.
func NewEndpointView(ep Endpoint, now time.Time) EndpointView {
	usage, _ := ep.UsageRatio()
	return EndpointView{
		Endpoint:        ep,
		Rows:            ep.TotalRows(),
		Usage:           usage,
		GrowthPerMin:    ep.GrowthRate(now),
		WriteRowsPerMin: ep.WriteRate(now),
		ETAFull:         ep.TimeToFull(now),
		Flags:           EvaluateEndpoint(ep, now),
	}
}
