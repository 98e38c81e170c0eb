package poller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// scripted is an in-memory workspace for RunOnce tests: discovery,
// status, settle and endpoints answer from fields the test sets.
type scripted struct {
	mu      sync.Mutex
	ds      []sources.Discovered
	discErr error
	status  map[string]func() (sources.Status, error)
	settle  map[string]sources.Status
	settles int
	eps     []model.Endpoint
	epsErr  error
	// slow, when set, is waited on by each capacity call: the fake clock
	// moves on while the round waits for it.
	slow func()
}

func (s *scripted) Discover(ctx context.Context, retry sources.Retry) ([]sources.Discovered, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = retry(ctx, "ListQueries", func(context.Context) error { return nil })
	return s.ds, s.discErr
}

func (s *scripted) Status(_ context.Context, ref sources.Ref) (sources.Status, error) {
	s.mu.Lock()
	f := s.status[ref.StatementID]
	s.mu.Unlock()
	if f == nil {
		return sources.Status{}, fmt.Errorf("GetOperationStatus: %w", syscall.ECONNRESET)
	}
	return f()
}

func (s *scripted) Settle(_ context.Context, _ sources.Retry, ref sources.Ref) (sources.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settles++
	st, ok := s.settle[ref.StatementID]
	if !ok {
		return sources.Status{State: model.StateUnknown}, nil
	}
	return st, nil
}

func (s *scripted) Endpoints(context.Context, sources.Retry) ([]model.Endpoint, error) {
	if s.slow != nil {
		s.slow()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eps, s.epsErr
}

func (s *scripted) Probe(context.Context, string) error { return nil }

func running(id string) sources.Discovered {
	return sources.Discovered{Op: model.Operation{StatementID: id, WarehouseID: "wh", State: model.StateRunning},
		Ref: sources.Ref{StatementID: id, WarehouseID: "wh"}}
}

func runningStatus() (sources.Status, error) {
	open := true
	return sources.Status{State: model.StateRunning, Open: &open, Source: model.StatusViaThrift}, nil
}

func goneStatus() (sources.Status, error) {
	return sources.Status{}, fmt.Errorf("GetOperationStatus: %w", sources.ErrHandleGone)
}

func scriptedEngine(s *scripted) *Engine {
	return NewEngine(Options{Discoverer: s, Status: s, Capacity: s, Settle: s, Clock: newAutoClock(),
		Policy: retry.PolicyOptions{Limits: map[string]retry.Limit{"GetOperationStatus": {Attempts: 1}}}})
}

func errorOf(s model.Snapshot, kind model.ErrorKind) *model.ErrorInfo {
	for i := range s.Errors {
		if s.Errors[i].Kind == kind {
			return &s.Errors[i]
		}
	}
	return nil
}

// A truncated discovery is kept and said: an error entry of kind
// "truncated" with how many were seen, and it clears when a later
// discovery is complete.
func TestEngineTruncatedDiscoveryIsReported(t *testing.T) {
	s := &scripted{ds: []sources.Discovered{running("a")}, status: map[string]func() (sources.Status, error){"a": runningStatus},
		discErr: &sources.PartialError{Errs: []error{&sources.TruncatedError{Call: "ListQueries", What: "live statements",
			Seen: 5000, Pages: 10, Reason: "the page cap of 10 pages was reached"}}}}
	e := scriptedEngine(s)
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatalf("a partial discovery is not a failure: %v", err)
	}
	snap := e.Snapshot()
	te := errorOf(snap, model.KindTruncated)
	if len(snap.Operations) != 1 || te == nil || te.Seen != 5000 || te.Call != "ListQueries" || !strings.Contains(te.Message, "page cap of 10") {
		t.Fatalf("operations %d, errors %+v", len(snap.Operations), snap.Errors)
	}
	s.discErr = nil
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if errs := e.Snapshot().Errors; len(errs) != 0 {
		t.Fatalf("truncation kept after a complete discovery: %+v", errs)
	}
}

// A one-shot round that takes longer than the freshness goal (a slow
// capacity call, a throttled listing, a loaded machine) still confirmed
// every operation it read: the snapshot holds no Freshness error, which
// would make snapshot exit UNKNOWN for how long the round took. An
// operation the round could not read is still said (unread).
func TestRunOnceFreshnessIsNotTheRoundsLength(t *testing.T) {
	clk := newAutoClock()
	s := &scripted{ds: []sources.Discovered{running("a"), running("b")},
		status: map[string]func() (sources.Status, error){"a": runningStatus, "b": runningStatus},
		slow:   func() { <-clk.After(20 * time.Second) }}
	e := NewEngine(Options{Discoverer: s, Status: s, Capacity: s, Settle: s, Clock: clk,
		Policy: retry.PolicyOptions{Limits: map[string]retry.Limit{"GetOperationStatus": {Attempts: 1}}}})
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := e.Snapshot()
	if len(snap.Operations) != 2 || len(snap.Errors) != 0 {
		t.Fatalf("a round 20 s long: %d operations, errors %+v", len(snap.Operations), snap.Errors)
	}
	s.mu.Lock()
	s.status["b"] = nil // its polls fail in transport
	s.mu.Unlock()
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap = e.Snapshot()
	if errorOf(snap, model.KindUnread) == nil {
		t.Fatalf("an operation the round could not read is not said: %+v", snap.Errors)
	}
	for _, x := range snap.Errors {
		if x.Call == callFreshness {
			t.Errorf("a one-shot round's length reported as staleness: %+v", x)
		}
	}
}

// An operation the server no longer has is settled from the evidence:
// query history's final state, else UNKNOWN — never still RUNNING — and it
// is not counted as running.
func TestEngineGoneOperationSettledFromEvidence(t *testing.T) {
	s := &scripted{ds: []sources.Discovered{running("fin"), running("unk")},
		status: map[string]func() (sources.Status, error){"fin": runningStatus, "unk": runningStatus},
		settle: map[string]sources.Status{"fin": {State: model.StateFinished, Source: model.StatusViaHistory}}}
	e := scriptedEngine(s)
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.Snapshot().Summary().Running; got != 2 {
		t.Fatalf("running %d before the close, want 2", got)
	}
	s.mu.Lock()
	s.status["fin"], s.status["unk"] = goneStatus, goneStatus
	s.mu.Unlock()
	// The owner closed both between two polls; discovery still lists them.
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := e.Snapshot()
	byID := map[string]*model.OperationView{}
	for _, op := range snap.Operations {
		byID[op.StatementID] = op
	}
	if op := byID["fin"]; !op.Gone || op.State != model.StateFinished || op.StatusSource != model.StatusViaHistory {
		t.Errorf("fin: gone %v state %s source %q, want gone FINISHED from query history", op.Gone, op.State, op.StatusSource)
	}
	if op := byID["unk"]; !op.Gone || op.State != model.StateUnknown {
		t.Errorf("unk: gone %v state %s, want gone UNKNOWN", op.Gone, op.State)
	}
	if got := snap.Summary().Running; got != 0 {
		t.Errorf("summary.running %d after both are gone, want 0", got)
	}
	if errs := snap.Errors; len(errs) != 0 {
		t.Errorf("a settled gone operation is a read status: %+v", errs)
	}
}

// A round that could not read the status of its operations does not look
// OK: every unread operation carries its reason and the round gets an
// "unread" error entry.
func TestEngineRoundWithoutStatusIsNotOK(t *testing.T) {
	s := &scripted{ds: []sources.Discovered{running("a"), running("b")}, status: map[string]func() (sources.Status, error){}}
	e := scriptedEngine(s)
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := e.Snapshot()
	u := errorOf(snap, model.KindUnread)
	if u == nil || u.Seen != 0 || u.Call != CallStatus || !strings.Contains(u.Message, "any of the 2 operations") || !strings.Contains(u.Message, "reset") {
		t.Fatalf("errors %+v", snap.Errors)
	}
	for _, op := range snap.Operations {
		if op.LastError == nil {
			t.Errorf("%s: no reason for its unread status", op.StatementID)
		}
	}
	// One readable: still not OK, and says how many were read.
	s.mu.Lock()
	s.status["a"] = runningStatus
	s.mu.Unlock()
	_ = e.RunOnce(context.Background())
	if u := errorOf(e.Snapshot(), model.KindUnread); u == nil || u.Seen != 1 || !strings.Contains(u.Message, "1 of 2") {
		t.Fatalf("errors %+v", e.Snapshot().Errors)
	}
	s.mu.Lock()
	s.status["b"] = runningStatus
	s.mu.Unlock()
	_ = e.RunOnce(context.Background())
	if errs := e.Snapshot().Errors; len(errs) != 0 {
		t.Fatalf("all read, errors %+v", errs)
	}

	// The round's deadline ends before the polls: reason on each row.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = e.RunOnce(ctx)
	for _, op := range e.Snapshot().Operations {
		if op.LastError == nil {
			t.Errorf("%s: canceled round left no reason", op.StatementID)
		}
	}
}

// When an endpoint listing fails, the last known endpoints stay, marked
// with the error (observed_at gives their age), until a listing succeeds.
func TestEngineKeepsLastKnownEndpointsOnListingFailure(t *testing.T) {
	s := &scripted{eps: []model.Endpoint{{Name: "vs", RowLimit: 100, Indexes: []model.Index{{Name: "ix", Rows: 10}}}}}
	e := scriptedEngine(s)
	_ = e.RunOnce(context.Background())
	s.mu.Lock()
	s.eps, s.epsErr = nil, &sources.HTTPError{Call: "ListEndpoints", StatusCode: 502}
	s.mu.Unlock()
	_ = e.RunOnce(context.Background())
	snap := e.Snapshot()
	if len(snap.Endpoints) != 1 || snap.Endpoints[0].ListingError == nil || snap.Endpoints[0].ListingError.HTTPStatus != 502 ||
		snap.Endpoints[0].ObservedAt.IsZero() {
		t.Fatalf("endpoints after a failed listing: %+v", snap.Endpoints)
	}
	s.mu.Lock()
	s.eps, s.epsErr = []model.Endpoint{{Name: "vs", RowLimit: 100}}, nil
	s.mu.Unlock()
	_ = e.RunOnce(context.Background())
	if ep := e.Snapshot().Endpoints[0]; ep.ListingError != nil {
		t.Fatalf("listing error kept after success: %+v", ep.ListingError)
	}
}

type restActions struct{}

func (r *restActions) Cancel(context.Context, sources.Ref) error {
	return &sources.HTTPError{Call: "CancelExecution", StatusCode: 400, ErrorCode: "INVALID_PARAMETER_VALUE", Message: "no"}
}
func (r *restActions) Close(context.Context, sources.Ref) error { return nil }
func (r *restActions) ActionCalls(sources.Ref) (string, string) {
	return "CancelExecution", "CloseStatement"
}

// A cancel through the Statement Execution API is called CancelExecution
// in its give-up and its events, not CancelOperation.
func TestEngineNamesTheActionCallReallyMade(t *testing.T) {
	s := &scripted{ds: []sources.Discovered{running("a")}, status: map[string]func() (sources.Status, error){"a": runningStatus}}
	e := NewEngine(Options{Discoverer: s, Status: s, Actions: &restActions{}, Clock: newAutoClock()})
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := e.Cancel(context.Background(), "a")
	if err == nil || !strings.HasPrefix(err.Error(), "CancelExecution a: permanent") {
		t.Fatalf("cancel error %v, want it to name CancelExecution", err)
	}
	for {
		select {
		case ev := <-e.Events():
			if ev.Kind == model.EventAction && ev.Call != "CancelExecution" {
				t.Errorf("event %+v names %s", ev, ev.Call)
			}
			continue
		default:
		}
		break
	}
}

// listingFunc is a sources.WarehouseLister answering from a function.
type listingFunc func() (model.WarehouseListing, bool)

func (f listingFunc) WarehouseListing() (model.WarehouseListing, bool) { return f() }

// The snapshot carries what the warehouse listing said after the last
// successful discovery (it explains an empty Operations view), and
// nothing before one: a failed discovery does not refresh it.
func TestSnapshotCarriesTheWarehouseListing(t *testing.T) {
	s := &scripted{}
	var mu sync.Mutex
	answer, ok := model.WarehouseListing{Visible: 3}, true
	e := scriptedEngine(s)
	e.o.Warehouses = listingFunc(func() (model.WarehouseListing, bool) { mu.Lock(); defer mu.Unlock(); return answer, ok })
	if l := e.Snapshot().Workspace.Listing; l != nil {
		t.Fatalf("listing %+v before any discovery", l)
	}
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := e.Snapshot().Workspace.Listing; l == nil || l.Visible != 3 || l.Matched != 0 {
		t.Fatalf("listing %+v, want visible 3 matched 0", l)
	}
	mu.Lock()
	answer = model.WarehouseListing{Visible: 5, Matched: 5}
	mu.Unlock()
	s.mu.Lock()
	s.discErr = fmt.Errorf("ListQueries: %w", syscall.ECONNREFUSED)
	s.mu.Unlock()
	_ = e.RunOnce(context.Background())
	if l := e.Snapshot().Workspace.Listing; l == nil || l.Visible != 3 {
		t.Fatalf("listing %+v after a failed discovery, want the last good one", l)
	}
}

// A nil Open leaves what an earlier answer said; OpenUnknown (the
// proxy's evidence aged out) makes openness unknown again.
func TestEngineOpenUnknownClearsAnEarlierOpen(t *testing.T) {
	open := true
	ended := func(st sources.Status) func() (sources.Status, error) {
		return func() (sources.Status, error) {
			st.State, st.Source = model.StateFinished, model.StatusViaHistory
			return st, nil
		}
	}
	s := &scripted{ds: []sources.Discovered{running("a")},
		status: map[string]func() (sources.Status, error){"a": ended(sources.Status{Open: &open})}}
	e := scriptedEngine(s)
	openness := func() *bool {
		t.Helper()
		if err := e.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		ops := e.Snapshot().Operations
		if len(ops) != 1 {
			t.Fatalf("%d operations, want 1", len(ops))
		}
		return ops[0].Open
	}
	if o := openness(); o == nil || !*o {
		t.Fatalf("open %v after an answer that it is open", o)
	}
	s.mu.Lock()
	s.status["a"] = ended(sources.Status{})
	s.mu.Unlock()
	if o := openness(); o == nil || !*o {
		t.Fatalf("open %v after an answer silent on openness: want the earlier word kept", o)
	}
	s.mu.Lock()
	s.status["a"] = ended(sources.Status{OpenUnknown: true})
	s.mu.Unlock()
	if o := openness(); o != nil {
		t.Fatalf("open %v after OpenUnknown: want unknown", *o)
	}
}
