package poller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// Only attempts that follow a transport error ask for a fresh connection.
func TestFreshConnRequestedOnlyAfterTransportErrors(t *testing.T) {
	s := newOpServer(t)
	s.add(srvOp{ID: "a", State: "RUNNING", Open: true})
	var n int
	s.setFault(func(r request) fault {
		n++
		switch n {
		case 1:
			return fault{status: 503}
		case 2:
			return fault{reset: true}
		}
		return fault{}
	})
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	var asked []bool
	_, err := retry.Do(context.Background(), retry.NewPolicy(retry.PolicyOptions{Clock: newAutoClock()}), retry.Call{Name: CallStatus, Safe: true, OpID: "a"},
		func(ctx context.Context) (sources.Status, error) {
			asked = append(asked, sources.FreshConnRequested(ctx))
			return src.Status(ctx, sources.Ref{StatementID: "a"})
		})
	if err != nil || fmt.Sprint(asked) != "[false false true]" {
		t.Fatalf("err %v, fresh requested per attempt %v, want [false false true]", err, asked)
	}
}

// The observer hears every retry and the give-up, with the cause.
func TestObserverReports(t *testing.T) {
	var mu sync.Mutex
	var reps []retry.Report
	p := retry.NewPolicy(retry.PolicyOptions{Clock: newAutoClock(), Observe: func(r retry.Report) { mu.Lock(); reps = append(reps, r); mu.Unlock() }})
	err := p.Do(context.Background(), retry.Call{Name: "GetStatement", Safe: true, OpID: "x"}, func(context.Context) error {
		return &sources.HTTPError{Call: "GetStatement", StatusCode: 503, ErrorCode: "TEMPORARILY_UNAVAILABLE", RequestID: "rq"}
	})
	if err == nil || len(reps) != 4 || reps[3].GaveUp == nil || reps[0].Wait <= 0 || reps[0].Decision.Kind != model.KindUnavailable {
		t.Fatalf("reports %+v", reps)
	}
}

// Logs carry the cause but never the token.
func TestEngineLogsWithoutSecrets(t *testing.T) {
	s := newOpServer(t)
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	s.add(srvOp{ID: opID(1), State: "RUNNING", Open: true})
	var logs lockedBuffer
	o := sourceOptions(src)
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	h := startEngine(t, o)
	h.run(time.Second, 100*time.Millisecond)
	s.setFault(func(r request) fault {
		return fault{status: 401, body: errBody("UNAUTHENTICATED", "Bearer "+testToken+" is not valid", "req-x")}
	})
	h.run(3*time.Second, 100*time.Millisecond)
	h.stop()
	all := logs.String()
	if !strings.Contains(all, "UNAUTHENTICATED") || strings.Contains(all, testToken) {
		t.Fatalf("logs: %s", all)
	}
	// A give-up is a warning, with the call as an attribute.
	if !strings.Contains(all, `level=WARN msg="gave up: GetOperationStatus`) || !strings.Contains(all, "call=GetOperationStatus") {
		t.Errorf("no give-up at WARN with its call: %s", all)
	}
	for _, v := range h.e.Snapshot().Operations {
		if v.LastError == nil || strings.Contains(v.LastError.Message, testToken) {
			t.Fatalf("last error %+v", v.LastError)
		}
	}
}

// A terminal operation whose openness is unknown is asked on a backoff
// (10 s, 20 s, 40 s…) while UNCLOSED could matter, then no longer.
func TestEngineTerminalUnknownOpenStopsPolling(t *testing.T) {
	src := &unknownOpenSource{}
	o := Options{Discoverer: src, Status: src, Thresholds: model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 5 * time.Minute, LeakAfter: time.Minute}}
	h := startEngine(t, o)
	h.run(time.Minute, 500*time.Millisecond)
	if c := src.calls(); c != 3 {
		t.Fatalf("%d polls in the first minute, want 3 (at 0, 10 and 30 s)", c)
	}
	h.run(6*time.Minute, time.Second)
	c := src.calls()
	h.run(5*time.Minute, time.Second)
	if src.calls() != c || h.e.Health().Followed != 0 {
		t.Fatalf("still polled after 5 × leak-after: %d → %d", c, src.calls())
	}
}

type unknownOpenSource struct {
	mu sync.Mutex
	n  int
}

func (u *unknownOpenSource) Discover(context.Context, sources.Retry) ([]sources.Discovered, error) {
	return []sources.Discovered{{Op: model.Operation{StatementID: "fin", State: model.StateFinished}}}, nil
}

func (u *unknownOpenSource) Status(context.Context, sources.Ref) (sources.Status, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.n++
	return sources.Status{State: model.StateFinished}, nil
}

func (u *unknownOpenSource) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

// lockedBuffer is a bytes.Buffer safe for the engine's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A discovery that fails stops observation: logged at ERROR once per
// outage, with its call; its recovery at INFO.
func TestEngineLogsADiscoveryFailureAsAnError(t *testing.T) {
	var logs lockedBuffer
	src := &scripted{discErr: errors.New("ListQueries: the workspace is gone")}
	e := NewEngine(Options{Discoverer: src, Status: src, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Workspace: model.Workspace{Host: "https://adb-1.example"}})
	for range 2 {
		if err := e.RunOnce(context.Background()); err == nil {
			t.Fatal("RunOnce: no error")
		}
	}
	src.mu.Lock()
	src.discErr = nil
	src.mu.Unlock()
	if err := e.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	all := logs.String()
	if strings.Count(all, "level=ERROR") != 1 || !strings.Contains(all, "call=Discover") || !strings.Contains(all, "workspace=https://adb-1.example") ||
		!strings.Contains(all, `level=INFO msg="discovery recovered`) {
		t.Errorf("logs:\n%s", all)
	}
}
