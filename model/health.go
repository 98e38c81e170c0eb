package model

import (
	"fmt"
	"time"
)

// The follow engine's own state, as the views read it (the TUI header,
// serve's /v1/health): plain data, so that the TUI needs no poller.

// Health is the follow engine's own state for the TUI header.
type Health struct {
	Followed, InFlight int
	// NotFollowed counts the ended operations dropped by the bound on how
	// many are followed (docs/model.md), since start.
	NotFollowed                     int64
	BudgetAvailable, BudgetCapacity float64 // retry budget tokens
	Polls, Retries, GiveUps         int64
	LastError                       *ErrorInfo
	// LastRetry is the last failed attempt that the policy retries: the
	// cause to show while a call has not given up yet.
	LastRetry     *ErrorInfo
	EventsDropped int64
	// BatchCalls counts batch confirmation requests (query history by
	// statement ids); Polls counts per-operation status polls.
	BatchCalls int64
	Capacity   Capacity  // concurrency: latency, AIMD cap, ceiling, throttling
	Freshness  Freshness // whether the freshness goal holds, and why not
	// LastDiscovery is when discovery last succeeded (zero: never);
	// DiscoveryFailures counts the rounds that failed.
	// DiscoveryUp: the last round succeeded (the workspace is observed).
	LastDiscovery     time.Time
	DiscoveryFailures int64
	DiscoveryUp       bool
	// Waiting says what is awaited before the first listing can even be
	// asked for ("authenticating to … (gives up after 15s)"); "" when
	// nothing but the listing itself is.
	Waiting string
}

// Capacity is what the limiter knows, for Health and the freshness
// report.
type Capacity struct {
	Latency   time.Duration // moving average of answered calls
	Cap       int           // AIMD cap (halved on throttling)
	Ceiling   int           // Options.MaxInFlight
	Limit     int           // the in-flight bound now (Little's law within cap and ceiling)
	Throttled bool          // a 429/503 within the last 10 s
	Throttles int64         // throttled answers since start
}

// Freshness says whether the schedule holds its freshness goal: the p95
// time since a live operation's state was last confirmed, against the
// goal, and why not when it does not.
type Freshness struct {
	Goal     time.Duration
	P95      time.Duration // over live operations, at the last evaluation
	Live     int
	Held     bool
	Reason   string // "" when held
	Demand   float64
	InFlight int
}

func (f Freshness) String() string {
	if f.Held {
		return fmt.Sprintf("fresh: p95 %s ≤ %s over %d live", f.P95.Round(100*time.Millisecond), f.Goal, f.Live)
	}
	return fmt.Sprintf("freshness goal %s not held: p95 %s over %d live operations (%s)",
		f.Goal, f.P95.Round(100*time.Millisecond), f.Live, f.Reason)
}
