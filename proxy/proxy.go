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
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbxtop/dbxtop/internal/targets"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
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
	Policy retry.PolicyOptions
	// Clock drives the close queue and abandonment; nil is the wall clock.
	Clock retry.Clock
	// Tick is how often the close queue and abandonment look (default 1s).
	Tick time.Duration
	// Logger receives one structured record per upstream failure, heal,
	// queued close, abandonment action and eviction; never a token, a
	// handle secret or SQL text. nil: nothing is logged.
	Logger *slog.Logger
	// ActAs says whose credentials the proxy's own calls use:
	// ActAsClient (the default: the owning client's, held in memory for
	// its session only) or ActAsProxy (Authenticate's).
	ActAs string
	// CloseDefer is how long after a client's failed close the close
	// queue first tries, past the drivers' own close retries (default
	// DefaultCloseDefer).
	CloseDefer time.Duration
	// RetainFinished keeps a finished operation this long
	// (--retain-finished, default DefaultRetainFinished); MaxOperations
	// bounds the operations held (--max-operations, default
	// DefaultMaxOperations).
	RetainFinished time.Duration
	MaxOperations  int
	// ServerIdleTimeout is the server's own inactivity reaper
	// (--server-idle-timeout, default 430 s): an operation with result
	// pages left to fetch is not closed for abandonment before it.
	ServerIdleTimeout time.Duration
	// UpstreamIdleTimeout retires a pooled upstream connection idle this
	// long (--upstream-idle-timeout, default DefaultUpstreamIdleTimeout),
	// before the server or a load balancer closes it under a request.
	UpstreamIdleTimeout time.Duration
	// MaxConns bounds the client requests in flight in total and
	// MaxConnsPerClient those of one client, one credential (0: no
	// limit); idle connections hold no slot. A request beyond them waits
	// up to QueueWait (default DefaultQueueWait) for a slot, then is
	// answered 503 with Retry-After.
	MaxConns, MaxConnsPerClient int
	QueueWait                   time.Duration
	// StateFile persists the close queue (handles and secrets, never
	// credentials); "" keeps it in memory only. See StateFile().
	StateFile string
	// Gate says whether a warehouse is RUNNING (a *sources.WarehouseGate
	// fed by ListWarehouses). The proxy's own Thrift calls (its close
	// queue, abandonment, dbxtop's close and cancel) go only to running
	// warehouses: a Thrift call starts a stopped one. nil: the proxy has
	// no workspace credentials to list warehouses; its own calls then go
	// out as before (docs/proxy.md).
	Gate interface {
		Running(warehouseID string) (bool, string)
	}
	// Peers are the other replicas behind the same load balancer
	// (--peers), asked before an operation is treated as abandoned
	// (peers.go); nil: none. PeerToken is their admin token ("": this
	// proxy's own); a target's token file overrides it.
	Peers     targets.Source
	PeerToken string
	// PeerRootCAs verify the peers' certificates (--peer-ca); nil: the
	// system roots.
	PeerRootCAs *x509.CertPool
	// FailFastExhausted answers a Vector Search capacity refusal with a
	// status the SDKs do not retry (proxy/vector.go, docs/proxy-vector.md).
	FailFastExhausted bool
}

// HealLimits are the proxy's per-call limits in the project's retry
// policy. A client waits on the line while the proxy heals, so an
// idempotent call gets more attempts than dbxtop's own polls (whose next
// poll comes anyway) within the same 20 s; ExecuteStatement is repeated
// only after a failed dial, and its answer may legitimately take minutes
// (direct results), so its per-attempt deadline must not cut it.
var HealLimits = map[string]retry.Limit{
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

// Whose credentials the proxy's own calls use (--act-as).
const (
	ActAsClient = "client"
	ActAsProxy  = "proxy"
)

// DefaultCloseDefer waits past the drivers' own close retries before the
// close queue's first try: databricks-sql-go retries at 1, 2, 4 and 8 s
// (15 s), the Node driver and the JDBC fix within a few seconds
// (docs/proxy.md "The close queue").
const DefaultCloseDefer = 20 * time.Second

// DefaultUpstreamIdleTimeout is under the 60 s idle timeout common to
// cloud load balancers (AWS ALB's default; Azure's is 4 min): a pooled
// connection is retired before one could close it.
const DefaultUpstreamIdleTimeout = 50 * time.Second

// recentIdle: a connection idle longer than this is not reused for a call
// that must not be repeated; maxIdlePerHost: pooled connections kept.
const (
	recentIdle     = 2 * time.Second
	maxIdlePerHost = 256
)

// DefaultServerIdleTimeout is the server's inactivity reaper dbxtop
// counts down to (docs/configuration.md, --server-idle-timeout).
const DefaultServerIdleTimeout = 430 * time.Second

// MinCloseAbandoned is the shortest --close-abandoned window accepted
// without --force-short-window: drivers poll every 0.1 to 1 s, but a
// client's own pauses between pages or polls can be longer.
const MinCloseAbandoned = 30 * time.Second

// DefaultUserAgent is used when Options.UserAgent is empty.
const DefaultUserAgent = "dbxtop-proxy/dev"

// Proxy is the client-facing handler and the state behind the admin API.
type Proxy struct {
	o        Options
	upstream *url.URL
	rp       *httputil.ReverseProxy
	up       *http.Transport // pooled
	fresh    *http.Transport // no keep-alive: a healing retry never reuses a stale connection
	recent   *http.Transport // idle connections kept only moments: for calls never repeated
	pol      *retry.Policy
	own      *thrift.Client
	clk      retry.Clock
	st       *store
	stats    counters
	vec      vectorState // the REST leg's Vector Search writes (vector.go)
	metrics  *metrics
	limits   *limiter
	id       identity // client identities (owner key)
	health   upstreamHealth
	log      *slog.Logger
	started  time.Time
	wg       sync.WaitGroup
	// draining: a drain has begun (drain.go); inflight counts client
	// requests being served.
	draining atomic.Bool
	inflight atomic.Int64
	// ownSem bounds the proxy's own calls in flight (queue, abandonment).
	ownSem chan struct{}
	// peer: the replicas asked before abandonment (peers.go).
	peer peerState
}

// New checks o and builds a Proxy; Run starts its close queue.
func New(o Options) (*Proxy, error) {
	u, err := ParseUpstream(o.Upstream)
	if err != nil {
		return nil, err
	}
	if o, err = withDefaults(o); err != nil {
		return nil, err
	}
	p := &Proxy{o: o, upstream: u, clk: o.Clock, ownSem: make(chan struct{}, 4)}
	p.log = o.Logger
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if err := p.peer.init(o); err != nil {
		return nil, err
	}
	key, err := loadOwnerKey(o.StateFile, p.log)
	if err != nil {
		return nil, err
	}
	p.id = newIdentity(key)
	p.limits = newLimiter(o.MaxConns, o.MaxConnsPerClient, o.QueueWait, p.id)
	if p.clk == nil {
		p.clk = wallClock{}
	}
	p.st = newStore(o.RetainFinished, o.MaxOperations)
	p.st.ledgerEnv = ledgerEnv{o: p.o, clk: p.clk, id: p.id, stats: &p.stats, log: p.log, unopened: p.unopened}
	p.metrics = newMetrics(p)
	p.started = p.clk.Now()
	p.transports(o.Transport)
	p.pol = healPolicy(o, p.up)
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
		Transport: &observer{p: p},
		// No periodic flush: an answer of unknown length (chunked, or an
		// event stream) is still streamed at once by ReverseProxy, and one
		// with its Content-Length goes out as it is written, in full
		// buffers. Flushing every write (and the headers on their own,
		// first) cost two more writes per RPC.
		FlushInterval: 0,
		ErrorHandler:  p.answerError,
		ErrorLog:      nil,
		BufferPool:    &copyBuffers{},
	}
	return p, nil
}

// copyBuffers reuses ReverseProxy's copy buffers: without a pool it
// allocates one per answer, most of the proxy's garbage under load.
type copyBuffers struct{ p sync.Pool }

const copyBufferSize = 32 << 10 // ReverseProxy's own size

func (b *copyBuffers) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, copyBufferSize)
}

func (b *copyBuffers) Put(v []byte) {
	if cap(v) == copyBufferSize {
		v = v[:copyBufferSize]
		b.p.Put(&v)
	}
}

// withDefaults fills the options left zero and refuses an --act-as the
// proxy cannot honour.
func withDefaults(o Options) (Options, error) {
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	switch o.ActAs {
	case "":
		o.ActAs = ActAsClient
	case ActAsClient, ActAsProxy:
	default:
		return o, fmt.Errorf("proxy: --act-as %q: want client or proxy", o.ActAs)
	}
	if o.ActAs == ActAsProxy && o.Authenticate == nil {
		return o, errors.New("proxy: --act-as proxy needs the proxy's workspace credentials (--profile or DATABRICKS_TOKEN)")
	}
	if o.CloseDefer <= 0 {
		o.CloseDefer = DefaultCloseDefer
	}
	if o.UpstreamIdleTimeout <= 0 {
		o.UpstreamIdleTimeout = DefaultUpstreamIdleTimeout
	}
	if o.ServerIdleTimeout <= 0 {
		o.ServerIdleTimeout = DefaultServerIdleTimeout
	}
	return o, nil
}

// transports sets up the three upstream transports from base (or the
// default transport): pooled, fresh and recent.
func (p *Proxy) transports(base *http.Transport) {
	p.up = base
	if p.up == nil {
		p.up = http.DefaultTransport.(*http.Transport).Clone()
	}
	// Pooled connections are retired before the server's or load
	// balancer's idle timeout would close them under a request; enough are
	// kept for the clients behind the proxy (the default of 2 per host
	// churns a new connection for most requests under load).
	p.up.IdleConnTimeout = p.o.UpstreamIdleTimeout
	// The upstream is asked for the encodings the client asked for and no
	// other: net/http would otherwise add Accept-Encoding: gzip itself.
	p.up.DisableCompression = true
	if p.up.MaxIdleConnsPerHost < maxIdlePerHost {
		p.up.MaxIdleConnsPerHost = maxIdlePerHost
	}
	if p.up.MaxIdleConns != 0 && p.up.MaxIdleConns < maxIdlePerHost {
		p.up.MaxIdleConns = maxIdlePerHost
	}
	p.fresh = p.up.Clone()
	p.fresh.DisableKeepAlives = true
	// Calls that must not be repeated (ExecuteStatement, OpenSession,
	// FetchResults) reuse only a connection that answered moments ago.
	p.recent = p.up.Clone()
	p.recent.IdleConnTimeout = recentIdle
}

// healPolicy is the retry policy of the proxy's healing retries and its
// own calls: o.Policy with the proxy's defaults and HealLimits under the
// caller's limits.
func healPolicy(o Options, up *http.Transport) *retry.Policy {
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
	lim := map[string]retry.Limit{}
	for k, v := range HealLimits {
		lim[k] = v
	}
	for k, v := range po.Limits {
		lim[k] = v
	}
	po.Limits = lim
	po.Idle = append(po.Idle, up)
	return retry.NewPolicy(po)
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
	if len(r.Header.Values("Authorization")) > 1 {
		// Which one would the server read? The proxy would attribute the
		// call to the first: refused, never forwarded.
		p.stats.clientErrors.Add(1)
		writeError(w, http.StatusBadRequest, "BAD_REQUEST", "dbxtop-proxy: the request carries more than one Authorization header; send one")
		return
	}
	why, waited, release := p.limits.admit(r)
	if waited {
		p.stats.waited.Add(1)
	}
	if why != "" {
		p.refuseLimited(w, why)
		return
	}
	defer release()
	p.inflight.Add(1)
	defer p.inflight.Add(-1)
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, &callSlot{})))
}

// answerError is ReverseProxy's answer when no upstream answer can be
// given: a 502 with a Databricks-style error body naming the call, the
// attempts and the cause, so the client's error says what happened.
func (p *Proxy) answerError(w http.ResponseWriter, r *http.Request, err error) {
	var ce *clientError
	if errors.As(err, &ce) {
		// The client's own framing error or slowness: its fault, not the
		// upstream's; nothing was sent upstream.
		p.stats.clientErrors.Add(1)
		writeError(w, http.StatusBadRequest, "BAD_REQUEST", clean("dbxtop-proxy: "+err.Error()))
		return
	}
	if r.Context().Err() != nil {
		p.stats.clientGone.Add(1)
		return // the client left: nobody to answer
	}
	p.stats.upstreamFailures.Add(1)
	reason := clean(sources.Redact(err.Error()))
	call := ""
	if slot, _ := r.Context().Value(callKey{}).(*callSlot); slot != nil {
		call = slot.name
	}
	p.log.Warn("upstream failure", "call", call, "path", clean(r.URL.Path), "reason", reason)
	msg := clean("dbxtop-proxy: upstream " + reason)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = fmt.Fprintf(w, `{"error_code":"BAD_GATEWAY","message":%q}`, msg)
}

// callKey carries a *callSlot: the transport names the RPC there for
// answerError (same goroutine, one after the other).
type callKey struct{}

type callSlot struct{ name string }

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
			p.persistQueue(false)
		}
	}
}

// CloseIdleConnections drops pooled upstream connections.
func (p *Proxy) CloseIdleConnections() {
	p.up.CloseIdleConnections()
	p.fresh.CloseIdleConnections()
	p.recent.CloseIdleConnections()
	p.closePeers()
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// cleanInfo cleans every string of an error the proxy keeps for the
// admin API: the upstream wrote its code, message and request id.
func cleanInfo(info *model.ErrorInfo) *model.ErrorInfo {
	if info == nil {
		return nil
	}
	c := *info
	c.Call, c.ErrorCode, c.Message = clean(c.Call), clean(c.ErrorCode), clean(c.Message)
	c.RequestID, c.Workspace = clean(c.RequestID), clean(c.Workspace)
	c.Kind = model.ErrorKind(clean(string(c.Kind)))
	return &c
}

// clean makes server- or client-supplied text safe for output: the admin
// API's one rule (adminapi.Clean).
func clean(s string) string { return adminapi.Clean(s) }
