package model

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/dbxtop/dbxtop/textfmt"
)

// UnknownClient stands for an operation whose client application the
// server did not report.
const UnknownClient = "(unknown)"

// ClientStats is one client application and user over the recent window:
// the Clients view's row and the snapshot's clients[] entry.
type ClientStats struct {
	ClientApplication string `json:"client_application"`
	User              string `json:"user"`
	Statements        int    `json:"statements"`
	// Orphans: operations the server reaped for inactivity (REAPED) or
	// whose client went silent while they run (INACTIVE).
	Orphans int `json:"orphans"`
	// Leaks: finished operations left open (UNCLOSED) or whose close
	// failed (CLOSE_FAILED).
	Leaks         int `json:"leaks"`
	Cancellations int `json:"cancellations"`
	// P95Duration is the 95th percentile (nearest rank) of the durations
	// of the statements that completed in the window; nil when none did.
	P95Duration *time.Duration `json:"-"`
}

// AggregateClients groups the operations that started within window
// before now (first seen, when the start is unknown) by client
// application and user. Rows come sorted by orphans, then leaks, then
// statements, so the culprit is the first row. Pure: the caller passes
// now.
func AggregateClients(ops []*OperationView, now time.Time, window time.Duration) []ClientStats {
	type key struct{ app, user string }
	type acc struct {
		ClientStats
		durs []time.Duration
	}
	since := now.Add(-window)
	byKey := map[key]*acc{}
	for _, o := range ops {
		start := o.StartedAt
		if start.IsZero() {
			start = o.FirstSeenAt
		}
		if start.Before(since) {
			continue
		}
		k := key{o.ClientApplication, o.User}
		if k.app == "" {
			k.app = UnknownClient
		}
		a := byKey[k]
		if a == nil {
			a = &acc{ClientStats: ClientStats{ClientApplication: k.app, User: k.user}}
			byKey[k] = a
		}
		a.Statements++
		orphan, leak := false, false
		for _, f := range o.Flags {
			switch f.Kind {
			case FlagReaped, FlagInactive:
				orphan = true
			case FlagUnclosed, FlagCloseFailed:
				leak = true
			}
		}
		if orphan {
			a.Orphans++
		}
		if leak {
			a.Leaks++
		}
		if o.State == StateCanceled {
			a.Cancellations++
		}
		if !o.CompletedAt.IsZero() && !o.StartedAt.IsZero() && !o.CompletedAt.Before(o.StartedAt) {
			a.durs = append(a.durs, o.CompletedAt.Sub(o.StartedAt))
		}
	}
	out := make([]ClientStats, 0, len(byKey))
	for _, a := range byKey {
		if len(a.durs) > 0 {
			slices.Sort(a.durs)
			rank := int(math.Ceil(0.95*float64(len(a.durs)))) - 1
			d := a.durs[rank]
			a.P95Duration = &d
		}
		out = append(out, a.ClientStats)
	}
	slices.SortFunc(out, func(a, b ClientStats) int {
		return cmp.Or(
			cmp.Compare(b.Orphans, a.Orphans),
			cmp.Compare(b.Leaks, a.Leaks),
			cmp.Compare(b.Statements, a.Statements),
			cmp.Compare(a.ClientApplication, b.ClientApplication),
			cmp.Compare(a.User, b.User))
	})
	return out
}

// clientWire is ClientStats' JSON, with the duration in seconds.
type clientWire struct {
	ClientApplication string      `json:"client_application"`
	User              string      `json:"user"`
	Statements        int         `json:"statements"`
	Orphans           int         `json:"orphans"`
	Leaks             int         `json:"leaks"`
	Cancellations     int         `json:"cancellations"`
	P95DurationS      jsonSeconds `json:"p95_duration_s"`
}

// MarshalJSON encodes a clients[] entry (p95_duration_s null when unknown).
func (c ClientStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(clientWire{ClientApplication: c.ClientApplication, User: c.User,
		Statements: c.Statements, Orphans: c.Orphans, Leaks: c.Leaks,
		Cancellations: c.Cancellations, P95DurationS: secondsOf(c.P95Duration)})
}

// UnmarshalJSON decodes a clients[] entry.
func (c *ClientStats) UnmarshalJSON(b []byte) error {
	var w clientWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	// Decoded from a peer: its text is cleaned here.
	*c = ClientStats{ClientApplication: textfmt.Line(w.ClientApplication), User: textfmt.Line(w.User), Statements: w.Statements,
		Orphans: w.Orphans, Leaks: w.Leaks, Cancellations: w.Cancellations, P95Duration: w.P95DurationS.ptr()}
	return nil
}
