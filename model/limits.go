package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/textfmt"
)

// LimitSource says which rule produced an endpoint's row limit; it is the
// snapshot JSON's row_limit_source.
type LimitSource string

const (
	LimitNone      LimitSource = ""          // no rule applies: usage unknown
	LimitPublished LimitSource = "published" // the published figure for what the endpoint holds
	LimitConfig    LimitSource = "config"    // the config file's per-endpoint row limit
	LimitTag       LimitSource = "tag"       // the endpoint's dbxtop_row_limit custom tag
	LimitLearned   LimitSource = "learned"   // the row count at which the server refused writes
)

// Index types of GET /api/2.0/vector-search/indexes/{name}.
const (
	IndexDirectAccess = "DIRECT_ACCESS"
	IndexDeltaSync    = "DELTA_SYNC"
)

// Endpoint types.
const (
	EndpointStandard         = "STANDARD"
	EndpointStorageOptimized = "STORAGE_OPTIMIZED"
)

// The published figures (docs/capacity.md: sources, dates; all
// approximate, second-hand, and none is reported by any API).
const (
	// PublishedDirectAccessStandard: Direct Vector Access indexes on a
	// STANDARD endpoint, about 2 M vectors (no dimension given).
	PublishedDirectAccessStandard = 2_000_000
	// PublishedStandard: Delta Sync on STANDARD, about 320 M vectors at
	// PublishedDimension dimensions.
	PublishedStandard = 320_000_000
	// PublishedStorageOptimized: STORAGE_OPTIMIZED, 1 B+ vectors at
	// PublishedDimension dimensions.
	PublishedStorageOptimized = 1_000_000_000
	// PublishedDimension is the embedding dimension the figures are
	// quoted at; other dimensions scale the figure by 768/dim (storage is
	// rows × dimension).
	PublishedDimension = 768
	// IndexesPerEndpoint is the per-endpoint index quota (a real 400
	// QUOTA_EXCEEDED names it).
	IndexesPerEndpoint = 50
)

// LearnedLimit is a row limit learned from the server: the endpoint's row
// count when it answered RESOURCE_EXHAUSTED.
type LearnedLimit struct {
	Rows      int64     `json:"rows"`
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id,omitempty"`
	// Via is whose write the server refused: LearnedViaProbe (dbxtop's
	// empty upsert) or LearnedViaProxy (a client's upsert that dbxtop
	// proxy saw); "" in files written before it was recorded.
	Via string `json:"via,omitempty"`
}

// Where a learned limit came from (LearnedLimit.Via).
const (
	LearnedViaProbe = "probe"
	LearnedViaProxy = "proxy"
)

// learnedWhy is a learned limit's reason: when, at how many rows, and
// whose refused write taught it, with the request id.
func learnedWhy(l *LearnedLimit) string {
	why := fmt.Sprintf("limit learned %s from RESOURCE_EXHAUSTED at %s rows",
		l.At.UTC().Format("2006-01-02 15:04 UTC"), textfmt.Count(l.Rows))
	var whose string
	switch l.Via {
	case LearnedViaProbe:
		whose = "answering dbxtop's empty probe upsert"
	case LearnedViaProxy:
		whose = "answering a client's upsert seen by dbxtop proxy"
	default:
		return why
	}
	if l.RequestID != "" {
		whose += ", request " + textfmt.Line(l.RequestID)
	}
	return why + ", " + whose
}

// DefaultRowLimit is the published capacity of an endpoint type for Delta
// Sync indexes at 768 dimensions (0 = unknown type).
func DefaultRowLimit(endpointType string) int64 {
	switch endpointType {
	case EndpointStandard:
		return PublishedStandard
	case EndpointStorageOptimized:
		return PublishedStorageOptimized
	}
	return 0
}

// indexLimit is the published figure for one index's kind on an endpoint
// type, and a few words saying which figure it is.
func indexLimit(endpointType string, ix Index) (int64, string) {
	dim := ix.Dimension
	scaled := func(base int64) (int64, string) {
		if dim <= 0 {
			return base, "dimension unknown, " + strconv.Itoa(PublishedDimension) + " assumed"
		}
		if dim == PublishedDimension {
			return base, strconv.Itoa(dim) + " dims"
		}
		return base * PublishedDimension / int64(dim), fmt.Sprintf("%d dims, scaled from %s at %d", dim, textfmt.CountApprox(base), PublishedDimension)
	}
	switch endpointType {
	case EndpointStandard:
		if ix.Type == IndexDirectAccess {
			return PublishedDirectAccessStandard, ""
		}
		return scaled(PublishedStandard)
	case EndpointStorageOptimized:
		return scaled(PublishedStorageOptimized)
	}
	return 0, ""
}

func typeWords(t string) string {
	switch t {
	case IndexDirectAccess:
		return "Direct Access"
	case IndexDeltaSync:
		return "Delta Sync"
	case "":
		return "index of unknown type"
	}
	return t
}

// PublishedRowLimit is the published limit for what the endpoint holds,
// with the reason ("≈2 M: Direct Access on STANDARD, published figure").
// Each index type has its own figure, so an endpoint that mixes them gets
// the limit at which its current mix is full: Σ rows_i / limit_i is the
// share of the endpoint used, and the limit is rows / share. Without rows
// the smallest figure applies. 0 when the endpoint type is unknown.
func PublishedRowLimit(endpointType string, indexes []Index) (int64, string) {
	if DefaultRowLimit(endpointType) == 0 {
		return 0, ""
	}
	if len(indexes) == 0 {
		n := DefaultRowLimit(endpointType)
		return n, fmt.Sprintf("≈%s: %s with no indexes, Delta Sync figure at %d dims, published figure", textfmt.CountApprox(n), endpointType, PublishedDimension)
	}
	type kind struct {
		limit int64
		words string
	}
	var kinds []kind // distinct (limit, words), in first-seen order
	var counts []int
	var share float64
	var rows, minLimit int64
	for _, ix := range indexes {
		l, how := indexLimit(endpointType, ix)
		w := typeWords(ix.Type)
		if how != "" {
			w += " (" + how + ")"
		}
		found := false
		for i, k := range kinds {
			if k.limit == l && k.words == w {
				counts[i]++
				found = true
			}
		}
		if !found {
			kinds = append(kinds, kind{l, w})
			counts = append(counts, 1)
		}
		if minLimit == 0 || l < minLimit {
			minLimit = l
		}
		if ix.Rows > 0 {
			rows += ix.Rows
			share += float64(ix.Rows) / float64(l)
		}
	}
	if len(kinds) == 1 {
		return kinds[0].limit, fmt.Sprintf("≈%s: %s on %s, published figure", textfmt.CountApprox(kinds[0].limit), kinds[0].words, endpointType)
	}
	limit, how := minLimit, "; the smallest applies while the endpoint is empty"
	if rows > 0 && share > 0 {
		limit, how = int64(float64(rows)/share), ", weighted by each kind's rows"
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s ≈%s", counts[i], k.words, textfmt.CountApprox(k.limit))
	}
	return limit, fmt.Sprintf("≈%s: %s on %s, published figures%s", textfmt.CountApprox(limit), strings.Join(parts, " + "), endpointType, how)
}

// ResolveRowLimit picks the endpoint's row limit. Precedence, highest
// first: learned (the server refused writes at that count: the only
// measured figure), config (the operator's file), tag (the endpoint's
// dbxtop_row_limit), published (what the endpoint holds). The reason says
// which rule won and, when it overrides another, which one.
func ResolveRowLimit(ep Endpoint) (int64, LimitSource, string) {
	pub, pubWhy := PublishedRowLimit(ep.Type, ep.Indexes)
	type cand struct {
		n   int64
		src LimitSource
		why string
	}
	var cs []cand
	if l := ep.Learned; l != nil && l.Rows > 0 {
		cs = append(cs, cand{l.Rows, LimitLearned, learnedWhy(l)})
	}
	if ep.ConfigLimit > 0 {
		cs = append(cs, cand{ep.ConfigLimit, LimitConfig, textfmt.Count(ep.ConfigLimit) + ": config file"})
	}
	if ep.TagLimit > 0 {
		cs = append(cs, cand{ep.TagLimit, LimitTag, textfmt.Count(ep.TagLimit) + ": endpoint tag " + RowLimitTag})
	}
	if pub > 0 {
		cs = append(cs, cand{pub, LimitPublished, pubWhy})
	}
	if len(cs) == 0 {
		return 0, LimitNone, "no published figure for endpoint type " + quoteType(ep.Type) + "; set one in the config file or the " + RowLimitTag + " tag"
	}
	why := cs[0].why
	if len(cs) > 1 {
		next := cs[1]
		desc := textfmt.Count(next.n)
		if next.src == LimitPublished {
			desc = "≈" + textfmt.CountApprox(next.n)
		}
		why += fmt.Sprintf(" (over the %s %s)", next.src, desc)
	}
	return cs[0].n, cs[0].src, why
}

func quoteType(t string) string {
	if t == "" {
		return "(none reported)"
	}
	return strconv.Quote(t)
}

// LimitLine is a limit's reason as a phrase that starts with "limit"
// ("limit ≈2 M: Direct Access on STANDARD, published figure"; a learned
// limit's reason already does).
func LimitLine(why string) string {
	if strings.HasPrefix(why, "limit ") {
		return why
	}
	return "limit " + why
}

// WithRowLimit returns ep with RowLimit, RowLimitSource and RowLimitWhy
// resolved from its inputs.
func (ep Endpoint) WithRowLimit() Endpoint {
	ep.RowLimit, ep.RowLimitSource, ep.RowLimitWhy = ResolveRowLimit(ep)
	return ep
}

// LearnOutcome is what a capacity round said about the learned limit.
type LearnOutcome int

const (
	LearnKeep   LearnOutcome = iota // nothing new
	LearnNew                        // a RESOURCE_EXHAUSTED set (or moved) the learned limit
	LearnForget                     // the endpoint held more rows than the learned limit: it is stale
)

// UpdateLearned applies one capacity round to a learned limit. exhausted
// is true when the probe answered RESOURCE_EXHAUSTED at rows; otherwise
// rows above the learned figure mean the endpoint accepted writes past it
// (rows deleted then a new quota, or a resize), so the figure is
// forgotten and the next refusal learns again.
func UpdateLearned(prev *LearnedLimit, rows int64, exhausted bool, requestID, via string, now time.Time) (*LearnedLimit, LearnOutcome) {
	switch {
	case exhausted && rows > 0:
		if prev != nil && prev.Rows == rows {
			return prev, LearnKeep
		}
		return &LearnedLimit{Rows: rows, At: now, RequestID: requestID, Via: via}, LearnNew
	case prev != nil && rows > prev.Rows:
		return nil, LearnForget
	}
	return prev, LearnKeep
}
