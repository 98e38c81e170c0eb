// Package serve is `dbxtop serve`: one poller (a poller.Fleet of one
// engine per workspace) shared by many consumers over HTTP — Prometheus
// (/metrics), scripts (/api/v1/snapshot, /api/v1/events) and attached
// TUIs (`dbxtop attach`, whose actions come back through /api/v1/operations).
// See docs/fleet.md.
//
// Every endpoint but the probes (/healthz, /readyz) needs a bearer token:
// the read token (or the act token) for metrics, snapshot, health and
// events, the act token for actions — without one, serve refuses
// actions. Server-supplied text
// that becomes a metric label goes through textfmt.Line; JSON carries it as
// data (escaped by encoding/json) for the consumer to sanitise on output.
//
// It imports poller, report, model, sources, config, textfmt and
// internal/safefile from dbxtop, never tui or cmd.
package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dbxtop/dbxtop/internal/preauth"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/textfmt"
)

// DefaultListen is where `dbxtop serve` listens unless told: loopback, the
// port registered for dbxtop in the Prometheus default port allocations
// range.
const DefaultListen = "127.0.0.1:9464"

// Options configure a Server.
type Options struct {
	Listen string // host:port; port 0 picks a free one; "" → DefaultListen
	// Token is the read token (metrics, snapshot, health, events); "" →
	// 32 random hex characters, which FirstLine then shows.
	Token string
	// ActToken is the token actions (adopt, close, cancel) need; "" →
	// serve refuses actions.
	ActToken string
	// WebConfigFile is a Prometheus exporter web configuration (TLS, basic
	// auth, headers; see webconfig.go); it replaces TLSCert/TLSKey.
	WebConfigFile string
	TLSCert       string // PEM files; both or neither
	TLSKey        string
	Fleet         *poller.Fleet // required; the caller runs it
	// Counters is where the fleet's policies report calls (see
	// NewCounters); nil → calls are not counted.
	Counters *Counters
	// Tick is how often the orphan and leak counters look for new
	// operations; 0 → 1s.
	Tick time.Duration
	// Refresh is the fleet's listing period (--refresh), told to attached
	// TUIs; 0 → not told.
	Refresh time.Duration
	// Logger is serve's log (levels that mean something: see log.go);
	// nil → nothing is logged.
	Logger *slog.Logger
	// Version and Revision label dbxtop_build_info ("" → "unknown").
	Version, Revision string
	// InsecureListen allows plain HTTP on an address that is not loopback
	// (the bearer token would cross the network in clear).
	InsecureListen bool
	// PreAuthTimeout bounds how long a connection that has not
	// authenticated may idle or take over its headers (conns.go); 0 →
	// DefaultPreAuthTimeout.
	PreAuthTimeout time.Duration
}

// MinTokenLength is the shortest read or act token serve takes: a token
// guards every endpoint but the probes, so it must not be guessable (the
// one serve generates is 32 hex characters).
const MinTokenLength = 16

// CheckListen refuses plain HTTP on an address that is not loopback
// unless insecure is set: every consumer sends serve its token. tls is
// whether serve speaks TLS there (from any source of TLS configuration).
func CheckListen(addr string, tls, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: want HOST:PORT", addr)
	}
	if tls || insecure || IsLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("listen address %s is not loopback: the serve token would cross the network in clear; add --tls-cert/--tls-key (or --insecure-listen)", addr)
}

// IsLoopbackHost reports whether a URL's or address's host is this
// machine's loopback: "localhost" or a loopback IP ("" and 0.0.0.0, every
// interface, are not).
func IsLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Server is a running `serve`.
type Server struct {
	o     Options
	ln    net.Listener
	http  *http.Server
	url   string
	token []byte
	act   []byte // nil: actions refused
	// generated: serve made the read token, so its first line shows it
	// (a token it was given is never printed).
	generated bool
	hub       *hub
	reg       *prometheus.Registry
	web       *webConfig // nil without --web.config.file
	log       *slog.Logger
	watch     *watch
}

// New listens and prepares the handlers; nothing is served until Run.
func New(o Options) (*Server, error) {
	if o.Fleet == nil {
		return nil, errors.New("serve: no workspace to watch")
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.PreAuthTimeout <= 0 {
		o.PreAuthTimeout = DefaultPreAuthTimeout
	}
	if o.Counters == nil {
		o.Counters = NewCounters()
	}
	if o.Logger == nil {
		o.Logger = discardLogger
	}
	generated := o.Token == ""
	if generated {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("serve: random token: %w", err)
		}
		o.Token = hex.EncodeToString(b)
	}
	if err := checkTokens(o); err != nil {
		return nil, err
	}
	wc, tlsConf, err := tlsOf(o)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if err := CheckListen(o.Listen, tlsConf != nil, o.InsecureListen); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("serve: listen on %s: %w", o.Listen, err)
	}
	ln = preauth.Listener{Listener: ln, Timeout: o.PreAuthTimeout}
	scheme := "http"
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
		scheme = "https"
	}
	if o.ActToken != "" && o.ActToken == o.Token {
		_ = ln.Close()
		return nil, errors.New("serve: the act token and the read token are the same; give actions their own token")
	}
	s := &Server{o: o, ln: ln, token: []byte(o.Token), generated: generated, hub: newHub(), reg: prometheus.NewRegistry(), web: wc,
		log: o.Logger, watch: newWatch(o.Logger)}
	o.Counters.onProxyRead(s.watch.proxyRead)
	s.hub.onDrop = func() {
		s.log.Warn("an /api/v1/events reader is too slow: it loses its oldest events", "buffer", subscriberBuffer)
	}
	if o.ActToken != "" {
		s.act = []byte(o.ActToken)
	}
	s.url = scheme + "://" + ln.Addr().String()
	s.reg.MustRegister(newCollector(o.Fleet, o.Counters.clLimit), newProxiedCollector(o.Fleet), o.Counters,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
		buildInfo(o.Version, o.Revision))
	s.http = &http.Server{Handler: s.routes(), ReadHeaderTimeout: o.PreAuthTimeout, ReadTimeout: ReadTimeout,
		IdleTimeout: AuthIdleTimeout, MaxHeaderBytes: MaxHeaderBytes}
	preauth.Track(s.http)
	return s, nil
}

// checkTokens refuses a read or act token shorter than MinTokenLength,
// naming which, never showing it.
func checkTokens(o Options) error {
	for _, t := range []struct{ name, tok string }{{"read token", o.Token}, {"act token", o.ActToken}} {
		if t.tok != "" && len(t.tok) < MinTokenLength {
			return fmt.Errorf("serve: the %s is %d characters; serve takes at least %d (openssl rand -hex 16 makes one of 32)", t.name, len(t.tok), MinTokenLength)
		}
	}
	return nil
}

// tlsOf is serve's web configuration and TLS (nil: plain HTTP), from
// --web.config.file or --tls-cert/--tls-key.
func tlsOf(o Options) (*webConfig, *tls.Config, error) {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.WebConfigFile != "" && o.TLSCert != "" {
		return nil, nil, errors.New("--web.config.file and --tls-cert/--tls-key both give TLS: put the certificate in the web configuration's tls_server_config")
	}
	if o.WebConfigFile != "" {
		wc, err := loadWebConfig(o.WebConfigFile)
		if err != nil {
			return nil, nil, err
		}
		return wc, wc.tls, nil
	}
	if o.TLSCert == "" {
		return nil, nil, nil
	}
	for _, f := range []string{o.TLSCert, o.TLSKey} {
		if err := checkTLSFile(f); err != nil {
			return nil, nil, fmt.Errorf("TLS file %s: %w", f, err)
		}
	}
	cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
	if err != nil {
		return nil, nil, fmt.Errorf("TLS key pair: %w", err)
	}
	return nil, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// URL is http(s)://HOST:PORT, the address actually bound.
func (s *Server) URL() string { return s.url }

// Token is the read token clients must send.
func (s *Server) Token() string { return string(s.token) }

// FirstLine is what `dbxtop serve` prints first on stdout: the address,
// and the read token only when serve generated it (a token read from a
// file never reaches stdout or a journal).
func (s *Server) FirstLine() string {
	if s.generated {
		return fmt.Sprintf("listen=%s token=%s", s.url, s.token)
	}
	return "listen=" + s.url
}

// Run serves until ctx is done, forwarding the fleet's events to /api/v1/events
// subscribers and keeping the orphan/leak counters current; then it shuts
// the HTTP server down (event streams end) and returns.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.pump(ctx) }()
	go func() { defer wg.Done(); s.tick(ctx) }()
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	s.hub.close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(sctx)
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

func (s *Server) pump(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-s.o.Fleet.Events():
			s.hub.publish(ev)
		}
	}
}

func (s *Server) tick(ctx context.Context) {
	t := time.NewTicker(s.o.Tick)
	defer t.Stop()
	for {
		snaps := s.o.Fleet.Snapshots()
		s.o.Counters.reconcile(snaps)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.auth(false, promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})))
	mux.Handle("GET /api/v1/snapshot", s.auth(false, http.HandlerFunc(s.snapshot)))
	mux.Handle("GET /api/v1/health", s.auth(false, http.HandlerFunc(s.health)))
	mux.Handle("GET /api/v1/events", s.auth(false, http.HandlerFunc(s.events)))
	mux.Handle("POST /api/v1/operations/{id}/{action}", s.auth(true, http.HandlerFunc(s.action)))
	logged := s.logRefused(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.web.setHeaders(w.Header())
		logged.ServeHTTP(w, r)
	})
}

// auth checks the bearer token in constant time: the read or the act
// token to read, the act token to act; the scheme "Bearer" is required (a
// bare token is refused). With basic_auth_users in the web configuration,
// valid basic-auth credentials read too (Prometheus's basic_auth); only
// the act token acts. A request that authenticates lifts its
// connection's pre-authentication bound (conns.go).
func (s *Server) auth(act bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := bearer(r.Header.Get("Authorization"))
		isAct := got != nil && s.act != nil && subtle.ConstantTimeCompare(got, s.act) == 1
		isRead := got != nil && subtle.ConstantTimeCompare(got, s.token) == 1
		isUser := !isAct && !isRead && s.web.basicAuth(r)
		if isAct || isRead || isUser {
			preauth.MarkAuthenticated(r.Context())
		}
		switch {
		case !isAct && !isRead && !isUser:
			if s.web.hasUsers() {
				w.Header().Add("WWW-Authenticate", `Basic realm="dbxtop serve"`)
			}
			w.Header().Add("WWW-Authenticate", `Bearer realm="dbxtop serve"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong credentials (Authorization: Bearer TOKEN: the token of --serve-token-file, or the one on serve's first line when it generated it; or basic auth from --web.config.file)")
		case act && s.act == nil:
			writeError(w, http.StatusForbidden, "serve refuses actions: it was started without --act-token-file")
		case act && !isAct:
			writeError(w, http.StatusForbidden, "only the act token acts: send it as the bearer token (--act-token-file; DBXTOP_ACT_TOKEN for dbxtop attach); the read token and basic auth only read")
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// bearer is the token of an "Authorization: Bearer TOKEN" header (the
// scheme is case-insensitive, RFC 7235), nil for anything else.
func bearer(h string) []byte {
	scheme, tok, ok := strings.Cut(h, " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return nil
	}
	return []byte(tok)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func (s *Server) snapshot(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.o.Fleet.Snapshot())
}

// readyz: ready once every workspace has had a discovery round answered
// (successfully or not). It needs no token, so it says only counts: how
// many workspaces serve watches and how many it can observe (a workspace
// that is down does not make serve unready; /metrics and the snapshot
// name it).
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	var out struct {
		Ready      bool `json:"ready"`
		Workspaces int  `json:"workspaces"`
		Up         int  `json:"up"`
	}
	out.Ready = true
	for _, m := range s.o.Fleet.Members() {
		h := m.Engine.Health()
		if h.LastDiscovery.IsZero() && h.DiscoveryFailures == 0 {
			out.Ready = false
		}
		out.Workspaces++
		if h.DiscoveryUp {
			out.Up++
		}
	}
	code := http.StatusOK
	if !out.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, out)
}

// HealthInfo is /api/v1/health: the poller's own state, for attached TUIs.
type HealthInfo struct {
	ReadOnly bool `json:"read_only"`
	// Refresh is serve's --refresh (Go syntax): the period of its listing,
	// which an attached TUI shows instead of its own tick.
	Refresh string `json:"refresh,omitempty"`
	// Actions: serve takes actions from the act token (it has one and is
	// not read-only).
	Actions bool       `json:"actions"`
	Health  HealthJSON `json:"health"`
}

// HealthJSON is the part of poller.Health an attached TUI shows (the
// concurrency and freshness internals stay with serve's own log).
type HealthJSON struct {
	Followed          int              `json:"followed"`
	InFlight          int              `json:"in_flight"`
	BudgetAvailable   float64          `json:"retry_budget_available"`
	BudgetCapacity    float64          `json:"retry_budget_capacity"`
	Polls             int64            `json:"polls"`
	Retries           int64            `json:"retries"`
	GiveUps           int64            `json:"give_ups"`
	EventsDropped     int64            `json:"events_dropped"`
	LastError         *model.ErrorInfo `json:"last_error"`
	LastDiscovery     time.Time        `json:"last_discovery"`
	DiscoveryFailures int64            `json:"discovery_failures"`
	DiscoveryUp       bool             `json:"discovery_up"`
}

// UnmarshalJSON decodes /api/v1/health as attach reads it from another
// process: its text is cleaned here (the error cleans its own).
func (h *HealthInfo) UnmarshalJSON(b []byte) error {
	type plain HealthInfo // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	p.Refresh = textfmt.Line(p.Refresh)
	*h = HealthInfo(p)
	return nil
}

func healthJSON(h poller.Health) HealthJSON {
	return HealthJSON{Followed: h.Followed, InFlight: h.InFlight, BudgetAvailable: h.BudgetAvailable,
		BudgetCapacity: h.BudgetCapacity, Polls: h.Polls, Retries: h.Retries, GiveUps: h.GiveUps,
		EventsDropped: h.EventsDropped, LastError: h.LastError, LastDiscovery: h.LastDiscovery,
		DiscoveryFailures: h.DiscoveryFailures, DiscoveryUp: h.DiscoveryUp}
}

// Poller is HealthJSON back as a poller.Health.
func (h HealthJSON) Poller() poller.Health {
	return poller.Health{Followed: h.Followed, InFlight: h.InFlight, BudgetAvailable: h.BudgetAvailable,
		BudgetCapacity: h.BudgetCapacity, Polls: h.Polls, Retries: h.Retries, GiveUps: h.GiveUps,
		EventsDropped: h.EventsDropped, LastError: h.LastError, LastDiscovery: h.LastDiscovery,
		DiscoveryFailures: h.DiscoveryFailures, DiscoveryUp: h.DiscoveryUp}
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	info := HealthInfo{ReadOnly: s.o.Fleet.ReadOnly(), Actions: s.act != nil && !s.o.Fleet.ReadOnly(),
		Health: healthJSON(s.o.Fleet.Health())}
	if s.o.Refresh > 0 {
		info.Refresh = s.o.Refresh.String()
	}
	writeJSON(w, http.StatusOK, info)
}

// action runs adopt/close/cancel through the fleet, which refuses them in
// read-only mode: an attached TUI obeys serve's --read-only.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	id, act := r.PathValue("id"), r.PathValue("action")
	var fn func(context.Context, string) error
	switch act {
	case "adopt":
		fn = s.o.Fleet.Adopt
	case "close":
		fn = s.o.Fleet.Close
	case "cancel":
		fn = s.o.Fleet.Cancel
	default:
		writeError(w, http.StatusNotFound, "unknown action: adopt, close or cancel")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	err := fn(ctx, id)
	attrs := []any{"call", act, "statement_id", id}
	if err != nil {
		// The operator's action did not happen: a WARN, with the cause.
		s.log.Warn("action failed", append(attrs, "err", err)...)
	} else {
		s.log.Info("action done", attrs...)
	}
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]string{"result": act + " done"})
	case errors.Is(err, poller.ErrReadOnly):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, poller.ErrUnknownOperation):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		writeError(w, http.StatusBadGateway, err.Error())
	}
}
