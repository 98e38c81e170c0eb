package proxy

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbxtop/dbxtop/internal/targets"
	"github.com/dbxtop/dbxtop/proxy/adminapi"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Replicas behind a load balancer (docs/proxy.md "Replicas behind a load
// balancer"): the calls of one client session are spread over the
// replicas, so each sees a part of every operation's polls. Before a
// replica treats an operation as abandoned it asks every peer
// (--peers) for the last call it saw on the operation and its session,
// and acts only if none saw a later one; a replica that cannot ask every
// peer acts on nothing. Without peers, a replica that is asked about
// operations it never saw start (after a grace of one window from its
// start) is behind a load balancer: it turns abandonment off.

// PeerTimeout bounds one peer's answer (and the discovery of the peers).
const PeerTimeout = 5 * time.Second

// maxPeerAsks bounds the peers asked at once for one operation.
const maxPeerAsks = 16

// Outcomes of a peer check (dbxtop_proxy_peer_checks_total{outcome}).
const (
	peerAct         = "act"         // no peer saw a later call: the proxy acts
	peerLaterCall   = "later_call"  // a peer saw a call within the window
	peerInFlight    = "in_flight"   // a peer is serving a request on it now
	peerEnded       = "ended"       // a peer saw the client close it
	peerUnreachable = "unreachable" // a peer (or the list of peers) could not be read: nothing closed
	peerDisabled    = "disabled"    // no peers, and a load balancer spreads sessions: abandonment off
)

var peerOutcomes = []string{peerAct, peerLaterCall, peerInFlight, peerEnded, peerUnreachable, peerDisabled}

// peerState is the proxy's part in a group of replicas. Its counters are
// atomic; clients is guarded by mu.
type peerState struct {
	instance string
	src      targets.Source
	token    string
	roots    *x509.CertPool

	mu      sync.Mutex
	clients map[string]*http.Client // by TLS server name ("" for the URL's host)

	checks   [6]atomic.Int64 // by peerOutcomes' index
	peers    atomic.Int64    // peers at the last check (not counting itself)
	unopened [2]atomic.Int64 // calls on [0] sessions, [1] operations the proxy did not see opened
	disabled atomic.Bool     // abandonment turned off: a load balancer spreads sessions
}

func (ps *peerState) init(o Options) error {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return fmt.Errorf("proxy: generating the instance id: %w", err)
	}
	ps.instance, ps.src, ps.token, ps.roots = hex.EncodeToString(b[:]), o.Peers, o.PeerToken, o.PeerRootCAs
	ps.clients = map[string]*http.Client{}
	return nil
}

// Instance is this proxy's instance id (random at each start), as its
// last-call answers carry it.
func (p *Proxy) Instance() string { return p.peer.instance }

// setPeerToken gives the peers' admin token when --peers came without
// one: the replicas of one deployment share the admin token.
func (p *Proxy) setPeerToken(own string) {
	if p.peer.token == "" {
		p.peer.token = own
	}
}

func (ps *peerState) count(outcome string) {
	for i, o := range peerOutcomes {
		if o == outcome {
			ps.checks[i].Add(1)
		}
	}
}

// unopened notes a call on a session (op false) or an operation (op
// true) the proxy did not see opened. A sidecar's own restart explains
// either for a while: its clients' pooled sessions outlive it, and an
// operation started before it is called again within seconds. Past the
// grace, an operation it never saw start was started through another
// proxy (or its client left it silent for a whole window, which is what
// abandonment means): without peers, abandonment goes off. Called with
// the store locked.
func (p *Proxy) unopened(op bool, now time.Time) {
	if now.Sub(p.started) < p.grace() {
		return
	}
	i := 0
	if op {
		i = 1
	}
	p.peer.unopened[i].Add(1)
	if !op || p.peer.src != nil || p.o.CloseAbandoned <= 0 || p.peer.disabled.Swap(true) {
		return
	}
	p.log.Warn("abandonment disabled: a client polls operations this proxy never saw start, the mark of a load balancer spreading sessions over replicas; "+
		"one replica alone would close statements whose polls went to another (give every replica --peers, docs/proxy.md)",
		"close_abandoned", p.o.CloseAbandoned.String())
}

// mayAbandon says whether the whole picture agrees that o is abandoned:
// no load balancer spreading sessions without peers, and no peer that
// saw a later call on o or its session. When it does not, o's next look
// is armed and the reason is an event on it. Called without the lock.
func (p *Proxy) mayAbandon(ctx context.Context, o *op) bool {
	if p.peer.src == nil {
		if p.peer.disabled.Load() {
			p.peer.count(peerDisabled)
			p.st.rearm(o, "", "")
			return false
		}
		// The first window after the grace watches for a load balancer
		// before anything is closed.
		if watch := p.started.Add(2 * p.grace()); p.clk.Now().Before(watch) {
			p.st.armIfOpen(o, watch)
			return false
		}
		return true
	}
	id, sess, last, pending := p.st.abandonLook(o)
	ans, err := p.askPeers(ctx, id, sess)
	if err != nil {
		p.peer.count(peerUnreachable)
		p.log.Warn("abandoned operation not closed: not every peer could be asked", "statement_id", id, "cause", err.Error())
		p.st.rearm(o, "no action: not every peer could be asked ("+clean(err.Error())+")", "")
		return false
	}
	for _, a := range ans {
		if a.InFlight {
			p.peer.count(peerInFlight)
			p.st.rearm(o, "no action: a peer is serving a request on it or its session", "")
			return false
		}
		if a.Known && ended(a.Outcome) {
			p.peer.count(peerEnded)
			p.st.rearm(o, "", a.Outcome)
			return false
		}
		pending = pending || a.Pending
		last = latest(last, a.LastClientCallAt, a.SessionLastClientCallAt)
	}
	window := p.o.CloseAbandoned
	if pending && p.o.ServerIdleTimeout > window {
		window = p.o.ServerIdleTimeout
	}
	if due := last.Add(window); due.After(p.clk.Now()) {
		p.peer.count(peerLaterCall)
		p.st.peerSawLater(o, last, due)
		return false
	}
	p.peer.count(peerAct)
	return true
}

// ended says whether a peer's close outcome means the operation ended
// (an unobserved one is not: the peer could not read how it went).
func ended(outcome string) bool {
	switch outcome {
	case sources.ProxyClosed, sources.ProxyClosedByServer, sources.ProxyClosedByProxy, sources.ProxyGone:
		return true
	}
	return false
}

// grace is how long after its start the proxy takes a call on an
// operation it never saw start as one started before it: the
// abandonment window (--server-idle-timeout when abandonment is off).
func (p *Proxy) grace() time.Duration {
	if p.o.CloseAbandoned > 0 {
		return p.o.CloseAbandoned
	}
	return p.o.ServerIdleTimeout
}

func latest(t time.Time, more ...time.Time) time.Time {
	for _, m := range more {
		if m.After(t) {
			t = m
		}
	}
	return t
}

// askPeers asks every peer but this proxy what it saw of operation id and
// session sess; an error when the peers could not be listed or any could
// not be asked.
func (p *Proxy) askPeers(ctx context.Context, id, sess string) ([]adminapi.LastCall, error) {
	ctx, cancel := context.WithTimeout(ctx, PeerTimeout)
	defer cancel()
	ts, err := p.peer.src.Targets(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the peers (%s): %w", p.peer.src, err)
	}
	type result struct {
		t   targets.Target
		a   adminapi.LastCall
		err error
	}
	results := make([]result, len(ts))
	sem := make(chan struct{}, maxPeerAsks)
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			a, err := p.askPeer(ctx, t, id, sess)
			results[i] = result{t, a, err}
		}()
	}
	wg.Wait()
	var out []adminapi.LastCall
	var errs []error
	for _, r := range results {
		switch {
		case r.err != nil:
			errs = append(errs, fmt.Errorf("peer %s: %w", r.t.URL, r.err))
		case r.a.Instance != p.peer.instance:
			out = append(out, r.a)
		}
	}
	p.peer.peers.Store(int64(len(out) + len(errs)))
	return out, errors.Join(errs...)
}

// askPeer makes one GET of a peer's last-call for id.
func (p *Proxy) askPeer(ctx context.Context, t targets.Target, id, sess string) (adminapi.LastCall, error) {
	tok, _, err := t.Token(p.peer.token)
	if err != nil {
		return adminapi.LastCall{}, err
	}
	if tok == "" {
		return adminapi.LastCall{}, errors.New("no admin token for it: give --peer-token-file or --admin-token-file")
	}
	u := t.URL + adminapi.LastCallPath(url.PathEscape(id))
	if sess != "" {
		u += "?session=" + url.QueryEscape(sess)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return adminapi.LastCall{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("User-Agent", p.o.UserAgent)
	resp, err := p.peerClient(t.ServerName).Do(req)
	if err != nil {
		return adminapi.LastCall{}, errors.New(clean(err.Error()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, adminapi.MaxLastCall+1))
	switch {
	case err != nil:
		return adminapi.LastCall{}, fmt.Errorf("reading its answer: %w", err)
	case resp.StatusCode != http.StatusOK:
		return adminapi.LastCall{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, clean(textfmt.Line(string(body))))
	case len(body) > adminapi.MaxLastCall:
		return adminapi.LastCall{}, fmt.Errorf("an answer over %d bytes", adminapi.MaxLastCall)
	}
	var a adminapi.LastCall
	if err := json.Unmarshal(body, &a); err != nil || a.Instance == "" {
		return adminapi.LastCall{}, errors.New("not a last-call answer (is it a dbxtop proxy of this version's admin API?)")
	}
	return a, nil
}

// peerClient is the HTTP client for peers whose certificate names
// serverName ("": the URL's host); it follows no redirect.
func (p *Proxy) peerClient(serverName string) *http.Client {
	p.peer.mu.Lock()
	defer p.peer.mu.Unlock()
	if c := p.peer.clients[serverName]; c != nil {
		return c
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if serverName != "" || p.peer.roots != nil {
		tr.TLSClientConfig = &tls.Config{ServerName: serverName, RootCAs: p.peer.roots, MinVersion: tls.VersionTLS12}
	}
	c := &http.Client{Transport: tr, Timeout: PeerTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	p.peer.clients[serverName] = c
	return c
}

// closePeers drops the peer clients' idle connections.
func (p *Proxy) closePeers() {
	p.peer.mu.Lock()
	defer p.peer.mu.Unlock()
	for _, c := range p.peer.clients {
		c.CloseIdleConnections()
	}
}

// serveLastCall answers a peer's GET /v1/operations/{id}/last-call.
func (p *Proxy) serveLastCall(w http.ResponseWriter, r *http.Request) {
	id, sess := r.PathValue("id"), r.URL.Query().Get("session")
	if len(id) > maxIDText || len(sess) > maxIDText {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "a statement or session id is at most 64 characters")
		return
	}
	a := p.st.lastCall(id, sess)
	a.Instance = p.peer.instance
	writeJSON(w, http.StatusOK, a)
}

// peerCollector exposes the peer checks and the load-balancer detection.
type peerCollector struct{ p *Proxy }

var (
	peerChecksDesc = prometheus.NewDesc("dbxtop_proxy_peer_checks_total",
		"Abandonment looks by what the peers (--peers) said: act, later_call, in_flight, ended, unreachable (nothing closed), disabled (no peers behind a load balancer).", []string{"outcome"}, nil)
	peersDesc = prometheus.NewDesc("dbxtop_proxy_peers",
		"Peers found at the last abandonment look, not counting this proxy.", nil, nil)
	unopenedDesc = prometheus.NewDesc("dbxtop_proxy_unopened_calls_total",
		"Calls on sessions or operations this proxy did not see opened, past its start's grace: the mark of a load balancer spreading sessions.", []string{"kind"}, nil)
	abandonOffDesc = prometheus.NewDesc("dbxtop_proxy_abandonment_disabled",
		"1 when --close-abandoned is off at run time: operations this proxy never saw start are polled through it and it has no --peers.", nil, nil)
)

func (c peerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- peerChecksDesc
	ch <- peersDesc
	ch <- unopenedDesc
	ch <- abandonOffDesc
}

func (c peerCollector) Collect(ch chan<- prometheus.Metric) {
	ps := &c.p.peer
	for i, o := range peerOutcomes {
		ch <- prometheus.MustNewConstMetric(peerChecksDesc, prometheus.CounterValue, float64(ps.checks[i].Load()), o)
	}
	ch <- prometheus.MustNewConstMetric(peersDesc, prometheus.GaugeValue, float64(ps.peers.Load()))
	ch <- prometheus.MustNewConstMetric(unopenedDesc, prometheus.CounterValue, float64(ps.unopened[0].Load()), "session")
	ch <- prometheus.MustNewConstMetric(unopenedDesc, prometheus.CounterValue, float64(ps.unopened[1].Load()), "operation")
	off := 0.0
	if ps.disabled.Load() {
		off = 1
	}
	ch <- prometheus.MustNewConstMetric(abandonOffDesc, prometheus.GaugeValue, off)
}
