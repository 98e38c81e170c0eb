package poller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Member is one watched workspace of a Fleet: its name (the context) and
// its own engine, with its own retry policy and budget.
type Member struct {
	Name   string
	Engine *Engine
}

// Fleet watches several workspaces as one: each member keeps its own
// engine, policy and retry budget, so a workspace that is down spends only
// its own budget and never delays the others. A Fleet offers the same
// Snapshot / Events / Health / actions as one Engine, so the TUI and
// `serve` use either. A Fleet of one is exactly its engine's view.
type Fleet struct {
	members []Member
	window  time.Duration
	out     *emitter
}

// NewFleet builds a fleet; window is the clients[] window of the merged
// snapshot (0 → model.DefaultWindow).
func NewFleet(window time.Duration, members ...Member) *Fleet {
	if window <= 0 {
		window = model.DefaultWindow
	}
	return &Fleet{members: members, window: window, out: newEmitter()}
}

// Members lists the fleet's workspaces in the order given.
func (f *Fleet) Members() []Member { return f.members }

// Run runs every member's engine until ctx is done and forwards their
// events, each tagged with its workspace. It returns when every engine
// has stopped.
func (f *Fleet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, m := range f.members {
		wg.Add(2)
		engCtx, stop := context.WithCancel(ctx)
		go func() {
			defer wg.Done()
			defer stop()
			_ = m.Engine.Run(engCtx)
		}()
		go func() {
			defer wg.Done()
			f.forward(engCtx, m)
		}()
	}
	wg.Wait()
	return nil
}

func (f *Fleet) forward(ctx context.Context, m Member) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-m.Engine.Events():
			if len(f.members) > 1 {
				ev.Workspace = m.Name
			}
			f.out.emit(ev)
		}
	}
}

// Events is the members' events in arrival order (buffered; the oldest
// are dropped and counted when nobody reads).
func (f *Fleet) Events() <-chan model.Event { return f.out.ch }

// Snapshots are the members' own snapshots, each with whether its last
// discovery round succeeded (Up; false before the first).
func (f *Fleet) Snapshots() []model.NamedSnapshot { return f.named((*Engine).Snapshot) }

// named is each member's snapshot as take gives it, with its name and Up.
func (f *Fleet) named(take func(*Engine) model.Snapshot) []model.NamedSnapshot {
	out := make([]model.NamedSnapshot, len(f.members))
	for i, m := range f.members {
		out[i] = model.NamedSnapshot{Name: m.Name, Up: m.Engine.Health().DiscoveryUp, Snapshot: take(m.Engine)}
	}
	return out
}

// Snapshot merges the members' snapshots (model.Merge) with the clients[]
// of all of them; one member's snapshot is returned as it is.
func (f *Fleet) Snapshot() model.Snapshot {
	if len(f.members) == 1 {
		return f.members[0].Engine.Snapshot()
	}
	s := model.Merge(f.named((*Engine).snapshot))
	s.Clients = model.AggregateClients(s.Operations, s.GeneratedAt, f.window)
	return s
}

// Health sums the members' health; the budget is the sum of their
// budgets, LastError the last error of the first member that has one, and
// DiscoveryUp holds when every member is observed.
func (f *Fleet) Health() Health {
	h := Health{DiscoveryUp: len(f.members) > 0}
	for _, m := range f.members {
		mh := m.Engine.Health()
		h.DiscoveryUp = h.DiscoveryUp && mh.DiscoveryUp
		h.Followed += mh.Followed
		h.InFlight += mh.InFlight
		h.BudgetAvailable += mh.BudgetAvailable
		h.BudgetCapacity += mh.BudgetCapacity
		h.Polls += mh.Polls
		h.Retries += mh.Retries
		h.GiveUps += mh.GiveUps
		h.EventsDropped += mh.EventsDropped
		h.DiscoveryFailures += mh.DiscoveryFailures
		if mh.LastDiscovery.After(h.LastDiscovery) {
			h.LastDiscovery = mh.LastDiscovery
		}
		if h.LastRetry == nil && mh.LastRetry != nil {
			h.LastRetry = mh.LastRetry
		}
		if h.LastError == nil && mh.LastError != nil {
			le := *mh.LastError
			if len(f.members) > 1 {
				le.Workspace = m.Name
			}
			h.LastError = &le
		}
	}
	h.EventsDropped += f.out.dropped.Load()
	return h
}

// SetRefresh changes every member's discovery and capacity period.
func (f *Fleet) SetRefresh(d time.Duration) {
	for _, m := range f.members {
		m.Engine.SetRefresh(d)
	}
}

// Refresh is the first member's period (all members share one).
func (f *Fleet) Refresh() time.Duration {
	if len(f.members) == 0 {
		return 0
	}
	return f.members[0].Engine.Refresh()
}

// ReadOnly is true when any member refuses actions (they are built from
// one command line, so all agree).
func (f *Fleet) ReadOnly() bool {
	for _, m := range f.members {
		if m.Engine.ReadOnly() {
			return true
		}
	}
	return false
}

// Adopt, Close and Cancel go to the member that follows the operation
// (statement ids are UUIDs, unique across workspaces).
func (f *Fleet) Adopt(ctx context.Context, id string) error {
	e, err := f.owner(id)
	if err != nil {
		return err
	}
	return e.Adopt(ctx, id)
}

// Close re-closes an operation through the member that follows it.
func (f *Fleet) Close(ctx context.Context, id string) error {
	e, err := f.owner(id)
	if err != nil {
		return err
	}
	return e.Close(ctx, id)
}

// Cancel cancels an operation through the member that follows it.
func (f *Fleet) Cancel(ctx context.Context, id string) error {
	e, err := f.owner(id)
	if err != nil {
		return err
	}
	return e.Cancel(ctx, id)
}

func (f *Fleet) owner(id string) (*Engine, error) {
	// Read-only refuses before looking: the answer must not depend on
	// whether the id is known.
	if f.ReadOnly() {
		return nil, ErrReadOnly
	}
	for _, m := range f.members {
		if m.Engine.Follows(id) {
			return m.Engine, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownOperation, id)
}

// Shutdown gives every member its last close attempts and returns the
// adopted operations still open, across the fleet.
func (f *Fleet) Shutdown(ctx context.Context) []string {
	var left []string
	for _, m := range f.members {
		left = append(left, m.Engine.Shutdown(ctx)...)
	}
	return left
}
