package sim

import (
	"context"
	crand "crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbxtop/dbxtop/sources/thrift"
)

// Server is a running simulated workspace.
type Server struct {
	o          Options
	token      string
	url        string
	proxyURL   string // where the proxied clients connect; "" without Options.Proxy
	ln         net.Listener
	srv        *http.Server
	store      *store
	vec        *vectors
	inj        *injector
	warehouses []*warehouse
	starts     warehouseStarts
	started    time.Time // on the Clock, for the demo's scripted timeline

	// Counters are sync.Maps of *atomic.Int64: the request path takes no
	// shared lock to count (a lock there collapses throughput when the
	// machine is oversubscribed).
	requests sync.Map
	observer sync.Map // the subset of requests made by observers (dbxtop)
	// observerWrites counts observers' index data requests (upsert-data,
	// delete-data) by index type: dbxtop must never write to Delta Sync.
	observerWrites sync.Map
	faults         sync.Map

	latMu  sync.Mutex
	latRNG *rand.Rand // jitter of Options.Latency

	rules  []rule // scenario-scripted faults (demo)
	hints  hints
	thrift http.Handler // sources/thrift.NewHandler over thriftService

	cancel context.CancelFunc
	done   <-chan struct{} // closed when Close starts: ends injected latencies
	wg     sync.WaitGroup
	closed atomic.Bool
}

// Start listens, starts the reaper and the scenario's workload.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sim: not started: %w", err)
	}
	o = o.withDefaults()
	switch o.Scenario {
	case ScenarioDemo, ScenarioQuiet, ScenarioLoad, ScenarioVectorIncident:
	default:
		return nil, fmt.Errorf("sim: unknown scenario %q (demo, quiet, load, vector-incident)", o.Scenario)
	}
	faults, err := ParseFaults(o.Faults)
	if err != nil {
		return nil, fmt.Errorf("sim: --faults: %w", err)
	}
	token, err := o.token()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("sim: listening on %s: %w (is the port in use? try --listen 127.0.0.1:0)", o.Listen, err)
	}
	s := &Server{
		o: o, token: token, ln: ln,
		url:     "http://" + ln.Addr().String(),
		store:   newStore(o.Clock, o.IdleTimeout, o.LeakTimeout, o.Retention),
		vec:     newVectors(o.Clock, o.Scenario, o.Speed),
		inj:     newInjector(o.Seed, faults),
		started: o.Clock.Now(),
		latRNG:  rand.New(rand.NewPCG(uint64(o.Seed), 0x1a7e)),
	}
	s.warehouses = makeWarehouses(o.Seed, o.Warehouses, o.StoppedWarehouses, o.Clock.Now())
	s.seedSpareHistory()
	if o.Proxy != nil {
		u, err := o.Proxy(s.url)
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("sim: proxy for the demo's proxied clients: %w", err)
		}
		s.proxyURL = u
	}
	s.thrift = thrift.NewHandler(&thriftService{s: s})
	s.srv = s.httpServer()
	w, err := s.newWorkload()
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.run(ln, w)
	o.Logger.Info("sim: serving", "scenario", o.Scenario, "url", s.url, "warehouses", len(s.warehouses))
	return s, nil
}

// token is the bearer token clients must send: o.Token, or a random one.
func (o Options) token() (string, error) {
	if o.Token != "" {
		return o.Token, nil
	}
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", fmt.Errorf("sim: generating a token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// httpServer serves the routes, with a connection record per client
// connection (the fault injector's stale and reset faults use it).
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, &connInfo{})
		},
		ErrorLog: nil,
	}
}

// run starts serving on ln, the reaper, the workload w (nil: none) and,
// behind a proxy, the incident writer's last writes over HTTP; Close
// stops them all.
func (s *Server) run(ln net.Listener, w *workload) {
	o := s.o
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done = wctx.Done()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("sim: serve", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.reaper(wctx)
	}()
	if w != nil {
		w.run(wctx)
	}
	if s.proxyURL != "" && s.vec.writer != nil {
		// The incident writer's last writes go over HTTP through the proxy.
		s.vec.handOver(WriterOverHTTP)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.incidentWriter(wctx)
		}()
	}
}

// makeWarehouses builds n running warehouses for the workload and then
// stopped spare ones (named from the end of the list, so the workload's
// names do not change with the number of spares).
func makeWarehouses(seed int64, n, stopped int, now time.Time) []*warehouse {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5157))
	names := []string{"Shared Analytics", "ETL Pipelines", "BI Serverless", "Data Science", "Finance Reporting"}
	sizes := []string{"Small", "Large", "Medium", "X-Small", "2X-Large"}
	out := make([]*warehouse, n+max(stopped, 0))
	for i := range out {
		k := i
		if i >= n {
			k = len(names) - 1 - (i - n)
			for k < 0 {
				k += len(names)
			}
		}
		out[i] = &warehouse{id: fmt.Sprintf("%016x", r.Uint64()), name: names[k%len(names)], size: sizes[k%len(sizes)],
			state: WarehouseRunning, lastActive: now}
		if i < n && i >= len(names) {
			out[i].name = fmt.Sprintf("%s %d", names[i%len(names)], i/len(names)+1)
		}
		if i >= n {
			out[i].spare, out[i].state = true, WarehouseStopped
			if i-n >= len(names) {
				out[i].name = fmt.Sprintf("%s (spare %d)", out[i].name, i-n+1)
			}
		}
	}
	return out
}

// URL is the base URL, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.url }

// Timeouts are the effective server-side inactivity reaper and leak
// timeout, which a client needs to count down correctly.
func (s *Server) Timeouts() (idle, leak time.Duration) { return s.o.IdleTimeout, s.o.LeakTimeout }

// Token is the bearer token every request must carry.
func (s *Server) Token() string { return s.token }

// WarehouseIDs lists the running warehouses the workload uses, in a stable
// order (the stopped spares are StoppedWarehouseIDs).
func (s *Server) WarehouseIDs() []string {
	var ids []string
	for _, w := range s.warehouses {
		if !w.spare {
			ids = append(ids, w.id)
		}
	}
	return ids
}

// EndpointRowLimits is each vector search endpoint's row limit.
func (s *Server) EndpointRowLimits() map[string]int64 { return s.vec.limits() }

// SetFaults replaces the fault spec at run time (and restarts its RNGs).
func (s *Server) SetFaults(f Faults) { s.inj.set(f) }

// Close stops the workload, the reaper and the server. It waits for every
// goroutine the server started; ctx bounds the graceful part.
func (s *Server) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		// Grace ran out: cut remaining connections.
		_ = s.srv.Close()
	}
	s.wg.Wait()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("sim: shutdown cut connections that were still busy: %w", err)
	}
	return err
}

func (s *Server) reaper(ctx context.Context) {
	t := time.NewTicker(s.o.ReapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.store.reap()
			s.autoStop()
		}
	}
}

func (s *Server) hasWarehouse(id string) bool { return s.warehouse(id) != nil }

// ---- per-request plumbing ------------------------------------------------

type connKey struct{}
type callKey struct{}

// connInfo is per TCP connection: the stale fault poisons it so that its
// next request is answered with a reset.
type connInfo struct{ stale atomic.Bool }

// callInfo is what the handlers learn about the request they serve.
type callInfo struct {
	call      string
	ua        string
	warehouse string
	observer  bool
	conn      *connInfo
}

func callFrom(ctx context.Context) *callInfo {
	if ci, ok := ctx.Value(callKey{}).(*callInfo); ok {
		return ci
	}
	return &callInfo{}
}

// isObserver says whether a User-Agent belongs to dbxtop (dbxtop/ for the
// TUI, snapshot and serve; dbxtop-proxy/ for the proxy's own calls): its
// calls never count as the owning client's activity (dbxtop watches, it
// does not own), and /sim/v1/stats counts them apart in observer_requests.
// The proxy forwards its clients' User-Agents unchanged, so their calls
// through it still count as theirs.
func isObserver(ua string) bool {
	for _, tok := range strings.Fields(ua) {
		if strings.HasPrefix(tok, "dbxtop/") || strings.HasPrefix(tok, "dbxtop-proxy/") {
			return true
		}
	}
	return false
}

// latency draws one answer's delay: Options.Latency ± 20 %, uniform.
func (s *Server) latency() time.Duration {
	if s.o.Latency <= 0 {
		return 0
	}
	s.latMu.Lock()
	f := 0.8 + 0.4*s.latRNG.Float64()
	s.latMu.Unlock()
	return time.Duration(float64(s.o.Latency) * f)
}

// wait sleeps d for the request; false when the request or the server
// ended first (the answer is then already written or moot).
func (s *Server) wait(w http.ResponseWriter, r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.done:
		writeAPIError(w, http.StatusServiceUnavailable, "TEMPORARILY_UNAVAILABLE", "The simulator is shutting down.")
		return false
	}
}

func (s *Server) newCall(r *http.Request, call string) *callInfo {
	ci := &callInfo{call: call, ua: r.UserAgent(), warehouse: r.PathValue("id")}
	ci.observer = isObserver(ci.ua)
	ci.conn, _ = r.Context().Value(connKey{}).(*connInfo)
	if ci.conn == nil {
		ci.conn = &connInfo{}
	}
	return ci
}

func (s *Server) count(m *sync.Map, k string) {
	v, ok := m.Load(k)
	if !ok {
		v, _ = m.LoadOrStore(k, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

func snapshot(m *sync.Map) map[string]int64 {
	out := map[string]int64{}
	m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// authorized accepts the token as a bearer token, or as HTTP Basic with
// user "token" and the token as password, as Databricks accepts a
// personal access token (JDBC AuthMech=3, hive-driver; docs/simulator.md).
func (s *Server) authorized(r *http.Request) bool {
	got := r.Header.Get("Authorization")
	if user, pass, ok := r.BasicAuth(); ok {
		return subtle.ConstantTimeCompare([]byte(user), []byte("token")) == 1 &&
			subtle.ConstantTimeCompare([]byte(pass), []byte(s.token)) == 1
	}
	want := "Bearer " + s.token
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// rule is a scenario-scripted fault: it returns a fault kind to apply to
// this request, or "".
type rule func(ci *callInfo, r *http.Request, body []byte) string

// serve runs the common pipeline (count, poisoned connection, auth, faults,
// scripted faults) and then handle. faults=false exempts the introspection
// endpoints.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, ci *callInfo, body []byte, faults bool, handle func(http.ResponseWriter, *http.Request)) {
	s.count(&s.requests, ci.call)
	if ci.observer {
		s.count(&s.observer, ci.call)
	}
	if ci.conn.stale.Load() {
		// The stale fault's second half: this connection's reuse fails.
		resetConn(w)
		return
	}
	if !s.authorized(r) {
		writeAPIError(w, http.StatusUnauthorized, "UNAUTHENTICATED",
			"Credential was not sent or was of an unsupported type for this API.")
		return
	}
	var d decision
	if faults {
		d = s.inj.decide(ci.call)
		if d.latency > 0 {
			s.count(&s.faults, FaultLatency)
		}
		if lat := d.latency + s.latency(); lat > 0 && !s.wait(w, r, lat) {
			return
		}
		kind := d.answer
		if kind == "" {
			for _, rl := range s.rules {
				if kind = rl(ci, r, body); kind != "" {
					break
				}
			}
		}
		if kind != "" {
			s.count(&s.faults, kind)
			s.inject(w, kind, d.gateway)
			return
		}
	}
	ctx := context.WithValue(r.Context(), callKey{}, ci)
	handle(w, r.WithContext(ctx))
	if d.stale {
		s.count(&s.faults, FaultStale)
		ci.conn.stale.Store(true)
	}
}

// inject answers a request with a fault instead of its real answer.
func (s *Server) inject(w http.ResponseWriter, kind string, gateway int) {
	switch kind {
	case FaultReset:
		resetConn(w)
	case FaultThrottle:
		w.Header().Set("Retry-After", "1")
		writeAPIError(w, http.StatusTooManyRequests, "REQUEST_LIMIT_EXCEEDED",
			"Too many requests. Please wait a moment and try again.")
	case FaultThrottleBare:
		writeAPIError(w, http.StatusTooManyRequests, "REQUEST_LIMIT_EXCEEDED",
			"Too many requests. Please wait a moment and try again.")
	case FaultUnavailable:
		writeAPIError(w, http.StatusServiceUnavailable, "TEMPORARILY_UNAVAILABLE",
			"The service is temporarily unavailable. Please try again later.")
	case FaultGateway:
		if gateway == 0 {
			gateway = http.StatusBadGateway
		}
		writeGateway(w, gateway)
	case FaultQuota:
		writeAPIError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED",
			"Workspace quota exceeded for this API; the request will not succeed until usage drops.")
	default:
		writeAPIError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "sim: unknown fault "+kind)
	}
}

// resetConn closes the request's TCP connection with a reset (SO_LINGER 0)
// instead of answering: what a client sees when a load balancer drops it.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): the nearest thing is to abort.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// ---- introspection -------------------------------------------------------

// Stats is the /sim/v1/stats document.
type Stats struct {
	Operations opStats          `json:"operations"`
	Requests   map[string]int64 `json:"requests"`
	// ObserverRequests is the part of Requests made by observers (a
	// User-Agent with a dbxtop/ or dbxtop-proxy/ token), by call name: what
	// dbxtop itself cost the workspace, apart from the simulated clients.
	ObserverRequests map[string]int64 `json:"observer_requests"`
	// ObserverWrites counts observers' upsert-data and delete-data
	// requests by the index's type (DIRECT_ACCESS, DELTA_SYNC), whatever
	// the answer (an addition beyond the Databricks API).
	ObserverWrites map[string]int64 `json:"observer_writes"`
	Faults         map[string]int64 `json:"faults"`
	// WarehouseStarts counts stopped warehouses started by a Thrift
	// request, by who sent it (an addition beyond the Databricks API).
	WarehouseStarts WarehouseStarts `json:"warehouse_starts"`
	// Writer is the vector-incident writer's progress (absent without one).
	Writer *WriterStats `json:"vector_writer,omitempty"`
}

// Truth is the /sim/v1/truth document.
type Truth struct {
	Operations []TruthOperation `json:"operations"`
	Endpoints  []TruthEndpoint  `json:"endpoints"`
}

// TruthOperation is one operation as the server knows it.
type TruthOperation struct {
	StatementID       string    `json:"statement_id"`
	WarehouseID       string    `json:"warehouse_id"`
	ClientKind        string    `json:"client_kind"`
	State             string    `json:"state"`
	Open              bool      `json:"open"`
	OwnerLastActivity time.Time `json:"owner_last_activity"`
	// Extras for humans reading the document (docs/simulator.md, Ground truth); tests rely only on the other keys.
	User         string `json:"user,omitempty"`
	SQL          string `json:"sql,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// TruthEndpoint is one vector search endpoint's usage.
type TruthEndpoint struct {
	Name      string `json:"name"`
	Rows      int64  `json:"rows"`
	RowLimit  int64  `json:"row_limit"`
	Exhausted bool   `json:"exhausted"`
	// FirstRefusedAt is when the endpoint first answered
	// RESOURCE_EXHAUSTED (null before).
	FirstRefusedAt *time.Time `json:"first_refused_at"`
}

// Stats returns the /sim/v1/stats document.
func (s *Server) Stats() Stats {
	return Stats{Operations: s.store.stats(), Requests: snapshot(&s.requests),
		ObserverRequests: snapshot(&s.observer), ObserverWrites: snapshot(&s.observerWrites), Faults: snapshot(&s.faults), Writer: s.vec.writerStats(),
		WarehouseStarts: WarehouseStarts{Observer: s.starts.Observer.Load(), Clients: s.starts.Clients.Load()}}
}

// Truth returns the /sim/v1/truth document, newest operation first.
func (s *Server) Truth() Truth {
	t := Truth{Operations: []TruthOperation{}, Endpoints: []TruthEndpoint{}}
	for _, v := range s.store.views() {
		st := v.State
		if !v.Open {
			st = "CLOSED"
		}
		t.Operations = append(t.Operations, TruthOperation{
			StatementID: v.ID, WarehouseID: v.Warehouse, ClientKind: v.Kind, State: string(st),
			Open: v.Open, OwnerLastActivity: v.OwnerLast.UTC(), User: v.User, SQL: v.SQL, ErrorMessage: v.ErrMsg,
		})
	}
	for _, e := range s.vec.list() {
		te := TruthEndpoint{Name: e.Name, Rows: e.Rows, RowLimit: e.Limit,
			Exhausted: e.Exhausted || e.Rows >= e.Limit || s.inj.exhausted(e.Name)}
		if !e.FirstRefusal.IsZero() {
			at := e.FirstRefusal.UTC()
			te.FirstRefusedAt = &at
		}
		t.Endpoints = append(t.Endpoints, te)
	}
	sort.Slice(t.Endpoints, func(i, j int) bool { return t.Endpoints[i].Name < t.Endpoints[j].Name })
	return t
}
