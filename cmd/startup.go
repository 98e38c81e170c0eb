package cmd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/tui"
)

// startGrace is how long the TUI command waits for its workspace
// connection (configuration, credentials) before it takes the screen:
// a quick failure (no host) is then one line on stderr, and a slow one
// (an OAuth exchange, a CLI, a credential chain that hangs) is shown on
// the screen as what dbxtop waits for, with its deadline.
const startGrace = 500 * time.Millisecond

// callAuthenticate names connecting (auth resolution) in the errors the
// screen shows.
const callAuthenticate = "Authenticate"

// startingEngine is the TUI's engine while the workspace connection is
// still being made: it says what it waits for (Health.Waiting) and, once
// the fleet is built, hands everything to it; if building fails, its
// snapshot and health carry the error (the screen's "cannot observe"
// banner names it). Actions before then are refused.
type startingEngine struct {
	ws       model.Workspace
	readOnly bool
	waiting  string
	events   chan model.Event

	mu    sync.Mutex
	fleet *poller.Fleet
	err   *model.ErrorInfo
	// refresh is what + or - set before the fleet was built (0: none);
	// ready hands it over.
	refresh time.Duration
}

var (
	_ tui.Engine        = (*startingEngine)(nil)
	_ tui.RefreshSetter = (*startingEngine)(nil)
	_ tui.RefreshSetter = (*poller.Fleet)(nil)
)

func newStartingEngine(ws model.Workspace, readOnly bool, waiting string) *startingEngine {
	return &startingEngine{ws: ws, readOnly: readOnly, waiting: waiting, events: make(chan model.Event, 256)}
}

// ready hands over to f and forwards its events until ctx ends.
func (s *startingEngine) ready(ctx context.Context, f *poller.Fleet) {
	s.mu.Lock()
	s.fleet = f
	if s.refresh > 0 {
		f.SetRefresh(s.refresh)
	}
	s.mu.Unlock()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-f.Events():
				select {
				case s.events <- ev:
				default: // the TUI is behind: the fleet counts its own drops
				}
			}
		}
	}()
}

// failed records why the connection could not be made.
func (s *startingEngine) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = &model.ErrorInfo{Kind: model.KindPermanent, Call: callAuthenticate, Message: err.Error()}
}

func (s *startingEngine) get() (*poller.Fleet, *model.ErrorInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fleet, s.err
}

func (s *startingEngine) Snapshot() model.Snapshot {
	f, e := s.get()
	if f != nil {
		return f.Snapshot()
	}
	var errs []model.ErrorInfo
	if e != nil {
		errs = []model.ErrorInfo{*e}
	}
	return model.SnapshotOfViews(time.Now(), s.ws, model.MakeViews(0), nil, errs)
}

func (s *startingEngine) Events() <-chan model.Event { return s.events }

func (s *startingEngine) Health() model.Health {
	f, e := s.get()
	if f != nil {
		return f.Health()
	}
	if e != nil {
		return model.Health{LastError: e}
	}
	return model.Health{Waiting: s.waiting}
}

func (s *startingEngine) ReadOnly() bool { return s.readOnly }

// Refresh and SetRefresh reach the fleet once built; before, + and -
// are kept for it (tui.RefreshSetter).
func (s *startingEngine) Refresh() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fleet != nil {
		return s.fleet.Refresh()
	}
	return s.refresh
}

func (s *startingEngine) SetRefresh(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fleet != nil {
		s.fleet.SetRefresh(d)
		return
	}
	s.refresh = d
}

var errNotConnected = errors.New("dbxtop is not connected to the workspace yet")

func (s *startingEngine) Adopt(ctx context.Context, id string) error {
	if f, _ := s.get(); f != nil {
		return f.Adopt(ctx, id)
	}
	return errNotConnected
}

func (s *startingEngine) Close(ctx context.Context, id string) error {
	if f, _ := s.get(); f != nil {
		return f.Close(ctx, id)
	}
	return errNotConnected
}

func (s *startingEngine) Cancel(ctx context.Context, id string) error {
	if f, _ := s.get(); f != nil {
		return f.Cancel(ctx, id)
	}
	return errNotConnected
}

// authWaiting is what the screen says while credentials resolve.
func authWaiting(ws WorkspaceConfig) string {
	host := ws.Host
	if host == "" {
		host = "the workspace"
	}
	timeout := ws.AuthTimeout
	if timeout <= 0 {
		timeout = defaultAuthTimeout
	}
	return fmt.Sprintf("authenticating to %s (gives up after %s, --auth-timeout)", host, timeout)
}
