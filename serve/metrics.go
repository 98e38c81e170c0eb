package serve

import (
	"errors"
	"runtime"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// Every series is named dbxtop_…, and no label ever holds a statement id
// or SQL text: labels are workspace (context), warehouse, state, flag,
// severity, endpoint, call, outcome/kind, client application and proxy
// (host:port, at most adminapi.MaxProxies per workspace) — each a small set. Client applications are server text: sanitised, truncated,
// and capped (maxClientLabels distinct values, then "other").
const (
	maxLabelLen     = 96
	maxClientLabels = 100
	otherClient     = "other"
)

// gauge is one series computed from the snapshots at scrape time. To add
// a metric, add an entry to gauges: a name, help, labels and a function
// that emits values for one workspace.
type gauge struct {
	name, help string
	labels     []string // after "workspace"
	emit       func(ws model.NamedSnapshot, h poller.Health, out func(v float64, labels ...string))
}

// operationFlags are the flags an operation can carry; each is a series
// (0 when none) so a rule's increase and absence behave.
var operationFlags = []model.FlagKind{model.FlagInactive, model.FlagStale, model.FlagUnclosed, model.FlagCloseFailed, model.FlagReaped}

// endpointFlags are the flag and severity pairs model.EvaluateEndpoint
// raises, each one series per endpoint.
var endpointFlags = []model.Flag{
	{Kind: model.FlagCapacity, Severity: model.SeverityWarning},
	{Kind: model.FlagCapacity, Severity: model.SeverityCritical},
	{Kind: model.FlagExhausted, Severity: model.SeverityCritical},
	{Kind: model.FlagEndpointState, Severity: model.SeverityWarning},
	{Kind: model.FlagEndpointState, Severity: model.SeverityCritical},
	{Kind: model.FlagIndexNotReady, Severity: model.SeverityWarning},
	{Kind: model.FlagIndexQuota, Severity: model.SeverityWarning},
	{Kind: model.FlagIndexQuota, Severity: model.SeverityCritical},
	{Kind: model.FlagThroughput, Severity: model.SeverityWarning},
	{Kind: model.FlagThroughput, Severity: model.SeverityCritical},
}

var gauges = []gauge{
	// The proxies: one series per proxy read, from the snapshot, so a
	// proxy discovery no longer lists loses its series at the next scrape.
	// Their number is bounded by adminapi.MaxProxies.
	{"dbxtop_proxy_up", "With --proxy, per proxy (host:port): 1 when its admin API answered dbxtop's last read, 0 when it did not (what only it saw is then unknown).", []string{"proxy"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, p := range ws.Workspace.Proxies {
				out(boolF(p.Up), label(p.Name))
			}
		}},
	{"dbxtop_proxy_info", "With --proxy, per proxy: 1, labelled with the version its /v1/health reported (\"unknown\" before one answered).", []string{"proxy", "version"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, p := range ws.Workspace.Proxies {
				v := p.Version
				if v == "" {
					v = "unknown"
				}
				out(1, label(p.Name), label(v))
			}
		}},
	{"dbxtop_proxy_versions", "With --proxy, how many different versions the proxies run (more than 1: replicas of different versions).", nil,
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			if len(ws.Workspace.Proxies) == 0 {
				return
			}
			vs := map[string]bool{}
			for _, p := range ws.Workspace.Proxies {
				if p.Version != "" {
					vs[p.Version] = true
				}
			}
			out(float64(len(vs)))
		}},
	{"dbxtop_observe_up", "1 when dbxtop's last discovery of the workspace succeeded, 0 when it cannot observe it.", nil,
		func(ws model.NamedSnapshot, h poller.Health, out func(float64, ...string)) {
			out(boolF(ws.Up))
		}},
	{"dbxtop_operations", "Operations dbxtop shows, by warehouse and server state.", []string{"warehouse", "state"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			type k struct{ wh, st string }
			n := map[k]int{}
			for _, o := range ws.Operations {
				n[k{o.WarehouseID, string(o.State)}]++
			}
			for key, c := range n {
				out(float64(c), label(key.wh), key.st)
			}
		}},
	{"dbxtop_operations_flagged", "Operations carrying a flag, by warehouse, flag and severity (INACTIVE: an orphan the server will reap). Every flag and severity is present (0) for each warehouse dbxtop shows an operation on.", []string{"warehouse", "flag", "severity"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			type k struct {
				wh string
				f  model.Flag
			}
			n := map[k]int{}
			whs := map[string]bool{}
			for _, o := range ws.Operations {
				whs[o.WarehouseID] = true
				for _, f := range o.Flags {
					n[k{o.WarehouseID, model.Flag{Kind: f.Kind, Severity: f.Severity}}]++
				}
			}
			for wh := range whs {
				for _, kind := range operationFlags {
					for _, sev := range []model.Severity{model.SeverityWarning, model.SeverityCritical} {
						out(float64(n[k{wh, model.Flag{Kind: kind, Severity: sev}}]), label(wh), string(kind), string(sev))
					}
				}
			}
		}},
	{"dbxtop_reaper_countdown_min_seconds", "Shortest countdown to the server's inactivity reaper among operations whose client went silent, by warehouse (absent when none).", []string{"warehouse"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			least := map[string]float64{}
			for _, o := range ws.Operations {
				if o.ReapedIn == nil || !o.HasFlag(model.FlagInactive) {
					continue
				}
				s := o.ReapedIn.Seconds()
				if v, ok := least[o.WarehouseID]; !ok || s < v {
					least[o.WarehouseID] = s
				}
			}
			for wh, v := range least {
				out(v, label(wh))
			}
		}},
	{"dbxtop_endpoint_rows", "Indexed rows on a Vector Search endpoint.", []string{"endpoint"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				out(float64(e.Rows), label(e.Name))
			}
		}},
	{"dbxtop_endpoint_row_limit", "Row limit of a Vector Search endpoint (absent when unknown).", []string{"endpoint"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				if e.RowLimit > 0 {
					out(float64(e.RowLimit), label(e.Name))
				}
			}
		}},
	{"dbxtop_endpoint_usage_ratio", "Indexed rows / row limit of a Vector Search endpoint (absent when the limit is unknown).", []string{"endpoint"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				if e.RowLimit > 0 {
					out(e.Usage, label(e.Name))
				}
			}
		}},
	{"dbxtop_endpoint_row_limit_source", "1 for the rule that gave a Vector Search endpoint's row limit: published, config, tag or learned (docs/capacity.md).", []string{"endpoint", "source"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				if e.RowLimitSource != model.LimitNone {
					out(1, label(e.Name), string(e.RowLimitSource))
				}
			}
		}},
	{"dbxtop_endpoint_time_to_full_seconds", "Estimated time until a Vector Search endpoint reaches its row limit, at the median growth of the last 30 min (absent when not growing or the limit is unknown).", []string{"endpoint"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				if e.ETAFull != nil {
					out(e.ETAFull.Seconds(), label(e.Name))
				}
			}
		}},
	{"dbxtop_endpoint_write_rows_per_second", "Net rows per second written to a Vector Search endpoint, averaged over the last 5 min.", []string{"endpoint"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				out(e.WriteRowsPerMin/60, label(e.Name))
			}
		}},
	{"dbxtop_endpoint_throughput_utilization_ratio", "A Vector Search endpoint's concurrency utilisation (throughput_info), 0..1+ (absent when the server does not report it).", []string{"endpoint"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				if e.Throughput != nil {
					out(*e.Throughput/100, label(e.Name))
				}
			}
		}},
	{"dbxtop_endpoint_exhausted", "1 when a Vector Search endpoint is flagged EXHAUSTED (the server refused writes, or usage ≥ 100 %).", []string{"endpoint"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				out(boolF(e.HasFlag(model.FlagExhausted)), label(e.Name))
			}
		}},
	{"dbxtop_endpoint_flag", "1 when a Vector Search endpoint carries the flag at that severity, else 0 (docs/capacity.md: CAPACITY, EXHAUSTED, ENDPOINT_STATE, INDEX_NOT_READY, INDEX_QUOTA, THROUGHPUT).", []string{"endpoint", "flag", "severity"},
		func(ws model.NamedSnapshot, _ poller.Health, out func(float64, ...string)) {
			for _, e := range ws.Endpoints {
				for _, f := range endpointFlags {
					on := false
					for _, g := range e.Flags {
						on = on || (g.Kind == f.Kind && g.Severity == f.Severity)
					}
					out(boolF(on), label(e.Name), string(f.Kind), string(f.Severity))
				}
			}
		}},
	{"dbxtop_retry_budget_tokens", "Tokens left in the workspace's retry budget (retries stop when it cannot pay).", nil,
		func(_ model.NamedSnapshot, h poller.Health, out func(float64, ...string)) { out(h.BudgetAvailable) }},
	{"dbxtop_retry_budget_capacity", "Capacity of the workspace's retry budget.", nil,
		func(_ model.NamedSnapshot, h poller.Health, out func(float64, ...string)) { out(h.BudgetCapacity) }},
	{"dbxtop_followed_operations", "Operations dbxtop is polling.", nil,
		func(_ model.NamedSnapshot, h poller.Health, out func(float64, ...string)) { out(float64(h.Followed)) }},
}

// clientGauges are the Clients view in the recent window, by client
// application (users are left out of labels to bound cardinality; the
// snapshot's clients[] has them).
var clientGauges = []struct {
	name, help string
	value      func(model.ClientStats) float64
}{
	{"dbxtop_client_statements", "Statements in the recent window, by client application.", func(c model.ClientStats) float64 { return float64(c.Statements) }},
	{"dbxtop_client_orphans", "Orphaned statements (REAPED or INACTIVE) in the recent window, by client application.", func(c model.ClientStats) float64 { return float64(c.Orphans) }},
	{"dbxtop_client_leaks", "Leaked statements (UNCLOSED or CLOSE_FAILED) in the recent window, by client application.", func(c model.ClientStats) float64 { return float64(c.Leaks) }},
	{"dbxtop_client_cancellations", "Canceled statements in the recent window, by client application.", func(c model.ClientStats) float64 { return float64(c.Cancellations) }},
}

// buildInfo is dbxtop_build_info, the exporter convention: a constant 1
// whose labels say what runs.
func buildInfo(version, revision string) prometheus.Collector {
	if version == "" {
		version = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "dbxtop_build_info",
		Help:        "A constant 1 labelled with the version, revision, Go version and platform dbxtop serve was built from.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version(), "goos": runtime.GOOS, "goarch": runtime.GOARCH}})
	g.Set(1)
	return g
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// label makes server text a safe, bounded label value.
func label(s string) string {
	s = textfmt.Line(s)
	if len(s) > maxLabelLen {
		s = strings.ToValidUTF8(s[:maxLabelLen], "") + "…"
	}
	return s
}

// collector computes the gauges from the fleet at each scrape, so a
// scrape always sees the current state and nothing is cached twice.
type collector struct {
	fleet   *poller.Fleet
	descs   []*prometheus.Desc
	clients []*prometheus.Desc
	clLimit *clientLimiter
}

func newCollector(f *poller.Fleet, cl *clientLimiter) *collector {
	c := &collector{fleet: f, clLimit: cl}
	for _, g := range gauges {
		c.descs = append(c.descs, prometheus.NewDesc(g.name, g.help, append([]string{"workspace"}, g.labels...), nil))
	}
	for _, g := range clientGauges {
		c.clients = append(c.clients, prometheus.NewDesc(g.name, g.help, []string{"workspace", "client_application"}, nil))
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	for _, d := range c.clients {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	members := c.fleet.Members()
	for i, ws := range c.fleet.Snapshots() {
		h := members[i].Engine.Health()
		for gi, g := range gauges {
			g.emit(ws, h, func(v float64, labels ...string) {
				ch <- prometheus.MustNewConstMetric(c.descs[gi], prometheus.GaugeValue, v, append([]string{ws.Name}, labels...)...)
			})
		}
		// Clients: per workspace, summed over users.
		byApp := map[string]model.ClientStats{}
		for _, cs := range ws.Clients {
			app := c.clLimit.label(ws.Name, cs.ClientApplication)
			acc := byApp[app]
			acc.Statements += cs.Statements
			acc.Orphans += cs.Orphans
			acc.Leaks += cs.Leaks
			acc.Cancellations += cs.Cancellations
			byApp[app] = acc
		}
		for app, cs := range byApp {
			for gi, g := range clientGauges {
				ch <- prometheus.MustNewConstMetric(c.clients[gi], prometheus.GaugeValue, g.value(cs), ws.Name, app)
			}
		}
	}
}

// clientLimiter caps the distinct client_application label values of
// each workspace over serve's lifetime: a workspace's first
// maxClientLabels keep their name, later ones become "other"
// (docs/fleet.md). Per workspace, so one noisy workspace cannot take the
// names of the others; shared by the gauges and the counters, so a label
// means the same in both.
type clientLimiter struct {
	mu   sync.Mutex
	seen map[string]map[string]bool // workspace → application → kept
}

func newClientLimiter() *clientLimiter { return &clientLimiter{seen: map[string]map[string]bool{}} }

func (l *clientLimiter) label(workspace, app string) string {
	if app == "" {
		app = model.UnknownClient
	}
	app = label(app)
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.seen[workspace]
	if seen == nil {
		seen = map[string]bool{}
		l.seen[workspace] = seen
	}
	if seen[app] {
		return app
	}
	if len(seen) >= maxClientLabels {
		return otherClient
	}
	seen[app] = true
	return app
}

// Counters are serve's counters: calls, retries and give-ups reported by
// each workspace's retry policy, and orphans and leaks counted once per
// operation as they appear.
type Counters struct {
	calls, retries, giveUps *prometheus.CounterVec
	orphans, leaks          *prometheus.CounterVec
	clLimit                 *clientLimiter

	mu      sync.Mutex
	counted map[string]map[string]bool // workspace → statement id + flag → counted
	calls0  map[[2]string]bool         // (workspace, call) whose series are born
}

// bornKinds are the error kinds a call can retry or give up with: each
// call's series start at 0 for them when the call is first made, so that
// increase() sees its first failure (a series born at 1 reads as no
// increase).
var bornKinds = []model.ErrorKind{model.KindTransport, model.KindThrottled, model.KindUnavailable, model.KindPermanent}

// bear starts a call's counters at 0 the first time the workspace makes it.
func (c *Counters) bear(workspace, call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{workspace, call}
	if c.calls0[k] {
		return
	}
	if c.calls0 == nil {
		c.calls0 = map[[2]string]bool{}
	}
	c.calls0[k] = true
	c.calls.WithLabelValues(workspace, call, "ok")
	for _, kind := range bornKinds {
		c.calls.WithLabelValues(workspace, call, string(kind))
		c.giveUps.WithLabelValues(workspace, call, string(kind))
		if kind != model.KindPermanent { // permanent errors are never retried
			c.retries.WithLabelValues(workspace, call, string(kind))
		}
	}
}

// NewCounters builds the counters; hand Observer and Done to each
// workspace's retry.PolicyOptions.
func NewCounters() *Counters {
	return &Counters{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dbxtop_calls_total",
			Help: "Remote calls dbxtop made (after retries), by call and outcome (ok, or the error kind it gave up with)."},
			[]string{"workspace", "call", "outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dbxtop_retries_total",
			Help: "Retries of remote calls, by call and the kind of error retried."}, []string{"workspace", "call", "outcome"}),
		giveUps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dbxtop_give_ups_total",
			Help: "Remote calls that gave up, by call and error kind."}, []string{"workspace", "call", "outcome"}),
		orphans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dbxtop_orphans_total",
			Help: "Operations the server reaped for inactivity (REAPED), counted once each, by client application."},
			[]string{"workspace", "client_application"}),
		leaks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dbxtop_leaks_total",
			Help: "Operations left open after finishing (UNCLOSED) or whose close failed (CLOSE_FAILED), counted once per operation and flag, by client application."},
			[]string{"workspace", "client_application", "flag"}),
		clLimit: newClientLimiter(),
		counted: map[string]map[string]bool{},
	}
}

// Describe implements prometheus.Collector.
func (c *Counters) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range []*prometheus.CounterVec{c.calls, c.retries, c.giveUps, c.orphans, c.leaks} {
		v.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Counters) Collect(ch chan<- prometheus.Metric) {
	for _, v := range []*prometheus.CounterVec{c.calls, c.retries, c.giveUps, c.orphans, c.leaks} {
		v.Collect(ch)
	}
}

// Observer counts one workspace's retries and give-ups (PolicyOptions.Observe).
func (c *Counters) Observer(workspace string) func(retry.Report) {
	return func(r retry.Report) {
		kind := string(r.Decision.Kind)
		if kind == "" {
			kind = string(model.KindPermanent)
		}
		if r.GaveUp != nil {
			if r.GaveUp.Kind == model.KindCanceled || errors.Is(r.Err, sources.ErrHandleGone) {
				return
			}
			c.giveUps.WithLabelValues(workspace, r.Call.Name, string(r.GaveUp.Kind)).Inc()
			return
		}
		c.retries.WithLabelValues(workspace, r.Call.Name, kind).Inc()
	}
}

// Done counts one workspace's finished calls by outcome (PolicyOptions.Done).
func (c *Counters) Done(workspace string) func(retry.Call, int, error) {
	return func(call retry.Call, _ int, err error) {
		outcome := "ok"
		switch {
		case err == nil:
		case errors.Is(err, sources.ErrHandleGone):
			outcome = "gone"
		default:
			if info := retry.ErrorInfoOf(err); info != nil && info.Kind != "" {
				outcome = string(info.Kind)
			} else {
				outcome = "error"
			}
		}
		c.bear(workspace, call.Name)
		c.calls.WithLabelValues(workspace, call.Name, outcome).Inc()
	}
}

// reconcile counts each operation that newly carries REAPED, UNCLOSED or
// CLOSE_FAILED, once; an operation is forgotten when it leaves the
// workspace's snapshot (the engine keeps finished ones for minutes, far
// longer than a tick).
func (c *Counters) reconcile(parts []model.NamedSnapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ws := range parts {
		seen := c.counted[ws.Name]
		if seen == nil {
			seen = map[string]bool{}
			c.counted[ws.Name] = seen
		}
		present := map[string]bool{}
		for _, o := range ws.Operations {
			// Every client seen gets its counters at 0 before its first
			// orphan or leak, so increase() sees that first one.
			app := c.clLimit.label(ws.Name, o.ClientApplication)
			c.orphans.WithLabelValues(ws.Name, app)
			c.leaks.WithLabelValues(ws.Name, app, string(model.FlagUnclosed))
			c.leaks.WithLabelValues(ws.Name, app, string(model.FlagCloseFailed))
			for _, f := range o.Flags {
				var inc func()
				switch f.Kind {
				case model.FlagReaped:
					inc = func() { c.orphans.WithLabelValues(ws.Name, app).Inc() }
				case model.FlagUnclosed, model.FlagCloseFailed:
					inc = func() {
						c.leaks.WithLabelValues(ws.Name, app, string(f.Kind)).Inc()
					}
				default:
					continue
				}
				key := o.StatementID + "/" + string(f.Kind)
				present[key] = true
				if !seen[key] {
					seen[key] = true
					inc()
				}
			}
			for _, k := range []model.FlagKind{model.FlagReaped, model.FlagUnclosed, model.FlagCloseFailed} {
				key := o.StatementID + "/" + string(k)
				if seen[key] {
					present[key] = true
				}
			}
		}
		for key := range seen {
			if !present[key] {
				delete(seen, key)
			}
		}
	}
}
