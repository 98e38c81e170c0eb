package poller

import (
	"context"
	"fmt"
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
	var mu sync.Mutex
	var logs []string
	o := sourceOptions(src)
	o.Logf = func(f string, a ...any) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() }
	h := startEngine(t, o)
	h.run(time.Second, 100*time.Millisecond)
	s.setFault(func(r request) fault {
		return fault{status: 401, body: errBody("UNAUTHENTICATED", "Bearer "+testToken+" is not valid", "req-x")}
	})
	h.run(3*time.Second, 100*time.Millisecond)
	h.stop()
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(logs, "\n")
	if !strings.Contains(all, "UNAUTHENTICATED") || strings.Contains(all, testToken) {
		t.Fatalf("logs: %s", all)
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
