package poller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
)

// statusVia runs one policy-wrapped status call through src.
func statusVia(p *retry.Policy, src *httpSource, id string) error {
	_, err := retry.Do(context.Background(), p, retry.Call{Name: CallStatus, Safe: true, OpID: id}, func(ctx context.Context) (sources.Status, error) {
		return src.Status(ctx, sources.Ref{StatementID: id})
	})
	return err
}

// Done-when (a): 429 RESOURCE_EXHAUSTED → exactly one request, the error
// names error_code and request_id, and it returns well under 100 ms.
func TestResourceExhaustedOneRequestFast(t *testing.T) {
	s := newOpServer(t)
	s.setFault(func(request) fault {
		return fault{status: 429, header: map[string]string{"Retry-After": "1"},
			body: errBody("RESOURCE_EXHAUSTED", "Endpoint vs-1 is full: 2000000 rows", "0c6b8a1e-5a8f-4d1e-9e0b-7d3c2f1a9b00")}
	})
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	clk := newAutoClock()
	p := retry.NewPolicy(retry.PolicyOptions{Clock: clk})
	start := time.Now()
	err := p.Do(context.Background(), retry.Call{Name: CallProbe, Safe: false, OpID: "vs-1"}, func(ctx context.Context) error { return src.upsert(ctx) })
	took := time.Since(start)
	if n, _ := s.count("/upsert"); n != 1 {
		t.Fatalf("requests = %d, want exactly 1", n)
	}
	// "Well under 100 ms" without depending on the machine's speed: the
	// policy waited for nothing (no timer asked for, despite Retry-After: 1),
	// so the call costs one loopback round trip. The wall time is logged.
	if w := clk.Waits(); len(w) != 0 {
		t.Fatalf("the policy waited %v", w)
	}
	if took > 5*time.Second {
		t.Fatalf("returned after %s", took)
	}
	msg := err.Error()
	for _, want := range []string{"UpsertDataVectorIndex vs-1: permanent after 1 attempt in", "HTTP 429 RESOURCE_EXHAUSTED", "Endpoint vs-1 is full", "request_id 0c6b8a1e-5a8f-4d1e-9e0b-7d3c2f1a9b00"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	var he *sources.HTTPError
	var g *retry.GiveUpError
	if !errors.As(err, &he) || !errors.As(err, &g) || g.Attempts != 1 || !g.Permanent {
		t.Fatalf("chain: %#v", err)
	}
	info := retry.ErrorInfoOf(err)
	if info.Kind != model.KindPermanent || info.ErrorCode != "RESOURCE_EXHAUSTED" || info.HTTPStatus != 429 ||
		info.RequestID != "0c6b8a1e-5a8f-4d1e-9e0b-7d3c2f1a9b00" || info.Attempts != 1 || info.Call != CallProbe {
		t.Errorf("retry.ErrorInfoOf = %+v", info)
	}
	if strings.Contains(msg, testToken) {
		t.Error("token in error text")
	}
	t.Logf("429 RESOURCE_EXHAUSTED: 1 request, returned in %s: %s", took, msg)
}

// The retry after a transport error must not reuse a pooled connection.
// The pool holds three idle connections; the server resets the second
// request on any connection. Only a fresh connection can succeed.
func TestRetryUsesFreshConnection(t *testing.T) {
	for _, dropIdle := range []bool{true, false} {
		t.Run(map[bool]string{true: "idle dropped", false: "control: idle kept"}[dropIdle], func(t *testing.T) {
			s := newOpServer(t)
			s.add(srvOp{ID: "a", State: "RUNNING", Open: true})
			src := newHTTPSource(s)
			src.ignoreFresh = true // prove CloseIdleConnections on its own
			defer src.CloseIdleConnections()
			// Fill the pool with three idle keep-alive connections: the
			// server holds the first three requests until all arrived.
			gate, arrived := make(chan struct{}), 0
			s.setFault(func(r request) fault {
				if arrived++; arrived == 3 {
					close(gate)
				}
				return fault{gate: gate}
			})
			var wg sync.WaitGroup
			for i := 0; i < 3; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := statusVia(retry.NewPolicy(retry.PolicyOptions{}), src, "a"); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			base := s.connCount()
			if base != 3 {
				t.Fatalf("pool has %d connections, want 3", base)
			}
			s.setFault(func(r request) fault { return fault{reset: r.NthOn >= 2} })
			o := retry.PolicyOptions{Clock: newAutoClock()}
			if dropIdle {
				o.Idle = []sources.IdleCloser{src}
			}
			p := retry.NewPolicy(o)
			err := statusVia(p, src, "a")
			reqs := s.requests()
			if dropIdle {
				if err != nil {
					t.Fatalf("want success on a fresh connection: %v", err)
				}
				last := reqs[len(reqs)-1]
				if last.NthOn != 1 || last.Conn <= base || reqs[len(reqs)-2].Fault != "reset" {
					t.Fatalf("retry on conn %d (request %d on it), pool had %d: %+v", last.Conn, last.NthOn, base, reqs)
				}
				if len(reqs) != 3+2 {
					t.Fatalf("want 2 requests for the call, got %+v", reqs[3:])
				}
			} else if reqs[4].Conn > base || reqs[4].Fault != "reset" {
				// Without dropping idle connections the retry reuses a
				// pooled connection and fails again: the test discriminates.
				t.Fatalf("control: first retry on conn %d (%q), expected a pooled one to fail: %+v (err %v)", reqs[4].Conn, reqs[4].Fault, reqs, err)
			}
		})
	}
}

// A stale keep-alive connection (closed without an answer) is retried on
// a new connection: two connections, two requests, success.
func TestStaleKeepAliveRetried(t *testing.T) {
	s := newOpServer(t)
	s.add(srvOp{ID: "a", State: "RUNNING", Open: true})
	s.setFault(func(r request) fault { return fault{drop: r.NthOn == 2} })
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	clk := newAutoClock()
	p := retry.NewPolicy(retry.PolicyOptions{Clock: clk, Idle: []sources.IdleCloser{src}})
	if err := statusVia(p, src, "a"); err != nil {
		t.Fatal(err)
	}
	if err := statusVia(p, src, "a"); err != nil {
		t.Fatalf("stale connection not retried: %v", err)
	}
	reqs := s.requests()
	if len(reqs) != 3 || reqs[1].Fault != "drop" || reqs[2].Conn == reqs[1].Conn || s.connCount() != 2 {
		t.Fatalf("requests %+v conns %d", reqs, s.connCount())
	}
	if w := clk.Waits(); len(w) != 1 || w[0] < 125*time.Millisecond || w[0] > 250*time.Millisecond {
		t.Fatalf("first backoff %v, want in [125ms, 250ms]", w)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	s := newOpServer(t)
	s.add(srvOp{ID: "a", State: "RUNNING", Open: true})
	s.setFault(func(r request) fault {
		if len(s.reqs) <= 1 {
			return fault{status: 503, header: map[string]string{"Retry-After": "3"}, body: errBody("TEMPORARILY_UNAVAILABLE", "busy", "r1")}
		}
		return fault{}
	})
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	clk := newAutoClock()
	p := retry.NewPolicy(retry.PolicyOptions{Clock: clk})
	if err := statusVia(p, src, "a"); err != nil {
		t.Fatal(err)
	}
	if w := clk.Waits(); len(w) != 2 || w[0] != 3*time.Second || w[1] != 3*time.Second {
		t.Fatalf("waits %v, want [3s 3s]", w)
	}
}

func TestRetryAfterBeyondCapGivesUpAtOnce(t *testing.T) {
	s := newOpServer(t)
	s.setFault(func(request) fault {
		return fault{status: 429, header: map[string]string{"Retry-After": "120"}, body: errBody("REQUEST_LIMIT_EXCEEDED", "slow down", "r2")}
	})
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	clk := newAutoClock()
	err := statusVia(retry.NewPolicy(retry.PolicyOptions{Clock: clk}), src, "a")
	if n, _ := s.count("/status"); n != 1 || len(clk.Waits()) != 0 {
		t.Fatalf("requests %d waits %v", n, clk.Waits())
	}
	if err == nil || !strings.Contains(err.Error(), "server asked to wait 2m0s, more than the 30s cap") ||
		!strings.Contains(err.Error(), "REQUEST_LIMIT_EXCEEDED") {
		t.Fatalf("error %v", err)
	}
}

func TestAttemptLimitAndBackoffGrowth(t *testing.T) {
	s := newOpServer(t)
	s.setFault(func(request) fault { return fault{status: 502} })
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	clk := newAutoClock()
	p := retry.NewPolicy(retry.PolicyOptions{Clock: clk, Rand: func() float64 { return 1 }})
	err := statusVia(p, src, "01ef")
	if n, _ := s.count("/status"); n != 4 {
		t.Fatalf("requests %d, want 4", n)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	if w := clk.Waits(); len(w) != 3 || w[0] != want[0] || w[1] != want[1] || w[2] != want[2] {
		t.Fatalf("waits %v want %v", w, want)
	}
	if !strings.HasPrefix(err.Error(), "GetOperationStatus 01ef: gave up after 4 attempts in 1.8s (attempt limit 4 reached): HTTP 502") {
		t.Fatalf("error %q", err)
	}
	// Unsafe calls are not retried on 502.
	err = p.Do(context.Background(), retry.Call{Name: "ExecuteStatement"}, func(ctx context.Context) error { return src.upsert(ctx) })
	if n, _ := s.count("/upsert"); n != 1 || err == nil {
		t.Fatalf("unsafe 502: %d requests, err %v", n, err)
	}
}

func TestElapsedLimit(t *testing.T) {
	s := newOpServer(t)
	s.setFault(func(request) fault { return fault{status: 503, header: map[string]string{"Retry-After": "15"}} })
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	clk := newAutoClock()
	err := statusVia(retry.NewPolicy(retry.PolicyOptions{Clock: clk}), src, "a")
	// 15 s then another 15 s would pass the 20 s limit.
	if n, _ := s.count("/status"); n != 2 || !strings.Contains(err.Error(), "would pass the 20s elapsed limit") {
		t.Fatalf("%d requests, err %v", n, err)
	}
}

func TestBudgetExhausted(t *testing.T) {
	s := newOpServer(t)
	s.setFault(func(request) fault { return fault{reset: true} })
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	p := retry.NewPolicy(retry.PolicyOptions{Clock: newAutoClock(), BudgetCapacity: 12, RetryCost: 5, Idle: []sources.IdleCloser{src}})
	_ = statusVia(p, src, "a") // 3 attempts: 2 retries pay 10
	err := statusVia(p, src, "b")
	if n, _ := s.count("/status"); n != 4 {
		t.Fatalf("requests %d, want 3 + 1", n)
	}
	var g *retry.GiveUpError
	if !errors.As(err, &g) || g.Attempts != 1 || !strings.Contains(err.Error(), "retry budget exhausted") ||
		!strings.Contains(err.Error(), "transport: connection reset by peer") {
		t.Fatalf("err %v", err)
	}
	if avail, capa := p.Budget(); avail != 2 || capa != 12 {
		t.Fatalf("budget %v/%v", avail, capa)
	}
	// Successes refill it.
	s.setFault(nil)
	s.add(srvOp{ID: "a", State: "RUNNING", Open: true})
	for i := 0; i < 3; i++ {
		if err := statusVia(p, src, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if avail, _ := p.Budget(); avail != 5 {
		t.Fatalf("budget after 3 successes %v, want 5", avail)
	}
}

func TestCanceledReturnsAtOnce(t *testing.T) {
	s := newOpServer(t)
	arrived := make(chan struct{}, 1)
	s.setFault(func(request) fault { arrived <- struct{}{}; return fault{hang: true} })
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	p := retry.NewPolicy(retry.PolicyOptions{})
	done := make(chan error, 1)
	go func() {
		_, err := retry.Do(ctx, p, retry.Call{Name: CallStatus, Safe: true, OpID: "a"}, func(ctx context.Context) (sources.Status, error) {
			return src.Status(ctx, sources.Ref{StatementID: "a"})
		})
		done <- err
	}()
	<-arrived
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || retry.ErrorInfoOf(err).Kind != model.KindCanceled {
		t.Fatalf("err %v", err)
	}
	if n, _ := s.count("/status"); n != 1 {
		t.Fatalf("requests %d", n)
	}
}

func TestAttemptTimeoutIsATransportTimeout(t *testing.T) {
	s := newOpServer(t)
	s.add(srvOp{ID: "a", State: "RUNNING", Open: true})
	s.setFault(func(r request) fault { return fault{hang: len(s.reqs) == 1} })
	src := newHTTPSource(s)
	defer src.CloseIdleConnections()
	p := retry.NewPolicy(retry.PolicyOptions{Clock: newAutoClock(), AttemptTimeout: 30 * time.Millisecond, Idle: []sources.IdleCloser{src}})
	if err := statusVia(p, src, "a"); err != nil {
		t.Fatalf("hung attempt not retried: %v", err)
	}
	if avail, _ := p.Budget(); avail != 500 {
		t.Fatalf("timeout retry should cost 10 and be refunded on success; budget %v", avail)
	}
}

func TestGenericDoReturnsValue(t *testing.T) {
	n := 0
	v, err := retry.Do(context.Background(), retry.NewPolicy(retry.PolicyOptions{Clock: newAutoClock()}), retry.Call{Name: "X", Safe: true}, func(context.Context) (int, error) {
		n++
		if n < 2 {
			return 0, &sources.HTTPError{Call: "X", StatusCode: 503}
		}
		return 42, nil
	})
	if v != 42 || err != nil || n != 2 {
		t.Fatalf("v=%d err=%v n=%d", v, err, n)
	}
}

func TestRedactsTokens(t *testing.T) {
	g := &retry.GiveUpError{Call: retry.Call{Name: "X"}, Attempts: 1, Last: errors.New("Authorization: Bearer dapi0123abcd failed, token=abc")}
	if msg := g.Error(); strings.Contains(msg, "dapi0123abcd") || strings.Contains(msg, "token=abc") {
		t.Fatalf("secret in %q", msg)
	}
}
