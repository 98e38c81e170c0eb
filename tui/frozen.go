package tui

import (
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// frozenState is a source that is down while the screen still shows its
// last data: serve (for attach), the proxy, or the workspace's listing.
type frozenState struct {
	asOf      time.Time // when the shown data was last current; zero: never
	source    string    // "serve", "proxy", "workspace" or "workspace <name>"
	reason    string    // the failing call, one line
	workspace string    // with several workspaces, the one that is down
	all       bool      // every row is as old as asOf (serve)
}

// frozen says whether a source is down, from the snapshot's errors and
// the poller's health; nil when everything shown is current.
func frozen(ctx *programContext) *frozenState {
	s, h := &ctx.snap, &ctx.health
	for i := range s.Errors {
		if e := &s.Errors[i]; e.Call == "attach" {
			// serve is unreachable: its last snapshot is all there is.
			return &frozenState{asOf: s.GeneratedAt, source: "serve", reason: strings.TrimPrefix(e.Message, "cannot reach serve; showing its last snapshot: "), all: true}
		}
	}
	if h.DiscoveryUp || h.DiscoveryFailures == 0 {
		return nil
	}
	f := &frozenState{asOf: h.LastDiscovery, source: "workspace"}
	for _, w := range s.Workspaces {
		if !w.Up && len(s.Workspaces) > 1 {
			f.workspace = w.Name
			f.source = "workspace " + w.Name
			f.asOf = time.Time{} // the fleet's health has no per-member time
			break
		}
	}
	var pick *model.ErrorInfo
	for i := range s.Errors {
		e := &s.Errors[i]
		if e.Kind == model.KindTruncated || (f.workspace != "" && e.Workspace != "" && e.Workspace != f.workspace) {
			continue
		}
		if pick == nil || strings.HasPrefix(e.Call, "Proxy") {
			pick = e
		}
	}
	if pick == nil {
		pick = h.LastError
	}
	if pick != nil {
		if strings.HasPrefix(pick.Call, "Proxy") {
			f.source = "proxy"
		}
		f.reason = pick.Line()
	}
	return f
}

// frozenLine is the header's banner while a source is down:
// "data as of 12:00:05 — serve down: <reason>".
func (m *Model) frozenLine(f *frozenState) string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	dash := " — "
	if m.ctx.opts.ASCII {
		dash = " - "
	}
	as := "no data yet"
	switch {
	case f.workspace != "":
		as = "rows of " + f.workspace + " frozen"
	case !f.asOf.IsZero():
		as = "data as of " + f.asOf.UTC().Format("15:04:05")
	}
	line := as + dash + f.source + " down"
	if f.reason != "" {
		line += ": " + f.reason
	}
	return truncLine(st.Crit.Render(line), m.ctx.width, g.Ellipsis+" (! full)")
}

// agedAt is when a row's idle countdown was last true while its source is
// down, or zero when the row is current: every row when serve is down, a
// row whose last successful poll is older than two refreshes when the
// workspace or the proxy is.
func agedAt(ctx *programContext, op *model.OperationView) time.Time {
	f := ctx.frozen
	if f == nil {
		return time.Time{}
	}
	if f.all {
		return f.asOf
	}
	if f.workspace != "" && op.Workspace != f.workspace {
		return time.Time{}
	}
	if !op.LastPollOKAt.IsZero() && ctx.snap.GeneratedAt.Sub(op.LastPollOKAt) > 2*ctx.opts.Refresh {
		return op.LastPollOKAt
	}
	return time.Time{}
}
