// Package proxy is `dbxtop proxy`: a transparent Thrift-over-HTTP reverse
// proxy that clients (JDBC, ODBC, databricks-sql-go, any HiveServer2 HTTP
// client) are pointed at. It forwards every request unchanged
// (httputil.ReverseProxy), observes each RPC through bounded readers,
// heals idempotent calls with the project's retry policy, queues failed
// client closes until they succeed, and tells dbxtop what it saw through
// an admin API. See docs/proxy.md.
//
// It imports sources, sources/thrift, model, textfmt and the retry policy
// from dbxtop, never tui, serve, config or cmd (cmd wires it), and
// sources/sim never imports it.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Options configures a Proxy.
type Options struct {
	// Upstream is the workspace or server: https://host[:port], or plain
	// http:// on loopback (the simulator). No path: clients' paths are kept.
	Upstream string
	// Heal retries idempotent RPCs that fail on the upstream leg.
	Heal bool
	// CloseAbandoned, when > 0, closes (cancelling first if running) an
	// operation whose client has not called it or its session for this long.
	CloseAbandoned time.Duration
	// UserAgent of the proxy's own calls: "dbxtop-proxy/<version>".
	UserAgent string
	// Authenticate signs the proxy's own calls when it holds no client
	// credentials for the operation (the workspace flags); nil means the
	// proxy has none.
	Authenticate func(*http.Request) error
	// Transport carries upstream calls; nil is a clone of
	// http.DefaultTransport (system roots).
	Transport *http.Transport
	// Policy options for healing and the proxy's own calls (zero: the
	// project's defaults, docs/retry-policy.md).
	Policy poller.PolicyOptions
	// Clock drives the close queue and abandonment; nil is the wall clock.
	Clock poller.Clock
	// Tick is how often the close queue and abandonment look (default 1s).
	Tick time.Duration
	// Logf receives one line per action; it never gets a token or body.
	Logf func(string, ...any)
	// Gate says whether a warehouse is RUNNING (a *sources.WarehouseGate
	// fed by ListWarehouses). The proxy's own Thrift calls (its close
	// queue, abandonment, dbxtop's close and cancel) go only to running
	// warehouses: a Thrift call starts a stopped one. nil: the proxy has
	// no workspace credentials to list warehouses; its own calls then go
	// out as before (docs/proxy.md).
	Gate interface {
		Running(warehouseID string) (bool, string)
	}
}

// HealLimits are the proxy's per-call limits in the project's retry
// policy. A client waits on the line while the proxy heals, so an
// idempotent call gets more attempts than dbxtop's own polls (whose next
// poll comes anyway) within the same 20 s; ExecuteStatement is repeated
// only after a failed dial, and its answer may legitimately take minutes
// (direct results), so its per-attempt deadline must not cut it.
var HealLimits = map[string]poller.Limit{
	"GetOperationStatus":   {Attempts: 20, Elapsed: 20 * time.Second},
	"GetResultSetMetadata": {Attempts: 20, Elapsed: 20 * time.Second},
	"CancelOperation":      {Attempts: 20, Elapsed: 20 * time.Second},
	"CloseSession":         {Attempts: 20, Elapsed: 20 * time.Second},
	"GetInfo":              {Attempts: 20, Elapsed: 20 * time.Second},
	"ExecuteStatement":     {Attempts: 4, Elapsed: 20 * time.Second, Attempt: 15 * time.Minute},
}

// Healing's backoff and budget. The proxy repeats a call its client is
// waiting for, on a fresh connection over the proxy's own network leg, so
// it backs off from 50 ms (capped at 2 s) instead of dbxtop's 250 ms → 8 s
// (a poll that dbxtop retries is not holding up anyone). Its budget is
// sized for the clients behind it (2,000 tokens, 400 retries at the
// policy's cost of 5, refilled by successes): it still stops a storm when
// the upstream is down, since only successes refill it.
const (
	healBase   = 50 * time.Millisecond
	healCap    = 2 * time.Second
	healBudget = 2000
)

// DefaultUserAgent is used when Options.UserAgent is empty.
const DefaultUserAgent = "dbxtop-proxy/dev"

// Proxy is the client-facing handler and the state behind the admin API.
type Proxy struct {
	o        Options
	upstream *url.URL
	rp       *httputil.ReverseProxy
	up       *http.Transport // pooled
	fresh    *http.Transport // no keep-alive: a healing retry never reuses a stale connection
	pol      *poller.Policy
	own      *thrift.Client
	clk      poller.Clock
	st       *store
	stats    counters
	started  time.Time
	wg       sync.WaitGroup
	// ownSem bounds the proxy's own calls in flight (queue, abandonment).
	ownSem chan struct{}
}

// New checks o and builds a Proxy; Run starts its close queue.
func New(o Options) (*Proxy, error) {
	u, err := ParseUpstream(o.Upstream)
	if err != nil {
		return nil, err
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	p := &Proxy{o: o, upstream: u, st: newStore(), clk: o.Clock, ownSem: make(chan struct{}, 4)}
	if p.clk == nil {
		p.clk = wallClock{}
	}
	p.started = p.clk.Now()
	p.up = o.Transport
	if p.up == nil {
		p.up = http.DefaultTransport.(*http.Transport).Clone()
	}
	p.fresh = p.up.Clone()
	p.fresh.DisableKeepAlives = true
	po := o.Policy
	po.Clock = o.Clock
	if po.Base <= 0 {
		po.Base = healBase
	}
	if po.Cap <= 0 {
		po.Cap = healCap
	}
	if po.BudgetCapacity <= 0 {
		po.BudgetCapacity = healBudget
	}
	lim := map[string]poller.Limit{}
	for k, v := range HealLimits {
		lim[k] = v
	}
	for k, v := range po.Limits {
		lim[k] = v
	}
	po.Limits = lim
	po.Idle = append(po.Idle, p.up)
	p.pol = poller.NewPolicy(po)
	p.own, err = thrift.NewClient(thrift.Options{
		Host:         u.String(),
		HTTPPath:     func(path string) string { return path },
		Authenticate: p.ownAuth,
		UserAgent:    o.UserAgent,
		Transport:    p.up,
		Timeout:      -1, // the policy's per-attempt deadline bounds each call
	})
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			// SetURL joins paths; the upstream has none, so the client's
			// path and query reach it unchanged. User-Agent and
			// Authorization are copied untouched by ReverseProxy.
		},
		Transport:     &observer{p: p},
		FlushInterval: -1, // stream every write through at once
		ErrorHandler:  p.answerError,
		ErrorLog:      nil,
	}
	return p, nil
}

// ParseUpstream accepts https://host[:port], or http:// to a loopback
// address (the simulator); no credentials, path or query.
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(s), "/"))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("proxy: upstream %q: want https://host[:port]", sources.Redact(s))
	}
	if u.User != nil {
		return nil, errors.New("proxy: upstream must not carry credentials: clients send their own")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("proxy: upstream %q: no path or query; clients' paths are forwarded as they are", u.Redacted())
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("proxy: upstream %q: plain http only to a loopback address; use https", u.Redacted())
	}
	u.Path = ""
	return u, nil
}

// ServeHTTP forwards a client's request upstream.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.stats.requests.Add(1)
	p.rp.ServeHTTP(w, r)
}

// answerError is ReverseProxy's answer when no upstream answer can be
// given: a 502 with a Databricks-style error body naming the call, the
// attempts and the cause, so the client's error says what happened.
func (p *Proxy) answerError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		p.stats.clientGone.Add(1)
		return // the client left: nobody to answer
	}
	p.stats.upstreamFailures.Add(1)
	msg := clean("dbxtop-proxy: upstream " + sources.Redact(err.Error()))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = fmt.Fprintf(w, `{"error_code":"BAD_GATEWAY","message":%q}`, msg)
}

// Run drives the close queue and abandonment until ctx ends; it returns
// when its goroutines have stopped.
func (p *Proxy) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			p.wg.Wait()
			return
		case <-p.clk.After(p.o.Tick):
			p.tick(ctx)
		}
	}
}

// CloseIdleConnections drops pooled upstream connections.
func (p *Proxy) CloseIdleConnections() {
	p.up.CloseIdleConnections()
	p.fresh.CloseIdleConnections()
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// maxText bounds one client- or server-supplied string the proxy keeps.
const maxText = 512

// clean makes server- or client-supplied text safe for output (the
// project's one sanitiser, textfmt.Line): one line, no control character,
// escape sequence or bidi override, credentials redacted, at most maxText
// bytes.
func clean(s string) string {
	if len(s) > 4*maxText {
		s = s[:4*maxText]
	}
	s = textfmt.Line(sources.Redact(s))
	if len(s) > maxText {
		s = s[:maxText]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
