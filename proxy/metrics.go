package proxy

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics of the proxy at /metrics on the admin listener. Labels are the
// RPC name (the followed ones, "other" or "unknown": a small set) and an
// outcome: never a handle, a token, a user agent or SQL text.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// Request outcomes (dbxtop_proxy_requests_total{outcome}).
const (
	outcomeOK          = "ok"           // a Thrift success
	outcomeErrorStatus = "error_status" // a Thrift error status or exception: forwarded
	outcomeRefused     = "refused"      // 401/403 upstream: forwarded, never recorded
	outcomeHTTPError   = "http_error"   // another non-200 answer: forwarded
	outcomeNoAnswer    = "no_answer"    // no upstream answer: the proxy's 502
	outcomeUndecodable = "undecodable"  // forwarded, not read
	outcomeForwarded   = "forwarded"    // an RPC the proxy does not follow
)

func methodLabel(call string) string {
	switch {
	case call == "":
		return "unknown"
	case isFollowed(call), healable[call]:
		return call
	}
	return "other"
}

func newMetrics(p *Proxy) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dbxtop_proxy_requests_total",
		Help: "Client requests by RPC and outcome."}, []string{"method", "outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dbxtop_proxy_upstream_latency_seconds",
		Help:    "Time from sending a request upstream to its answer's headers, per attempt.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"method"})
	m.reg.MustRegister(m.requests, m.latency, &statsCollector{p: p}, peerCollector{p: p})
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) outcome(call, outcome string) {
	m.requests.WithLabelValues(methodLabel(call), outcome).Inc()
}

func (m *metrics) upstream(call string, d time.Duration) {
	m.latency.WithLabelValues(methodLabel(call)).Observe(d.Seconds())
}

// statsCollector exposes the proxy's counters and table at scrape time.
type statsCollector struct{ p *Proxy }

type statDesc struct {
	d     *prometheus.Desc
	typ   prometheus.ValueType
	value func(Stats) float64
}

var statDescs = []statDesc{
	{prometheus.NewDesc("dbxtop_proxy_heals_total", "Idempotent calls the proxy repeated and that then succeeded.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.Healed) }},
	{prometheus.NewDesc("dbxtop_proxy_heal_failures_total", "Idempotent calls still failing after the proxy's attempts.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.HealFailed) }},
	{prometheus.NewDesc("dbxtop_proxy_upstream_failures_total", "Requests answered 502 by the proxy (no upstream answer).", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.UpstreamFailures) }},
	{prometheus.NewDesc("dbxtop_proxy_client_errors_total", "Requests the client did not send whole or in time (answered 400).", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.ClientErrors) }},
	{prometheus.NewDesc("dbxtop_proxy_closes_queued_total", "Client closes that failed upstream and were queued.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.ClosesQueued) }},
	{prometheus.NewDesc("dbxtop_proxy_closes_completed_total", "Operations the proxy closed itself (queue, abandonment, dbxtop).", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.ClosedByProxy) }},
	{prometheus.NewDesc("dbxtop_proxy_client_closes_answered_total", "Client closes retried after the proxy's close, answered as successful.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.CloseAnswered) }},
	{prometheus.NewDesc("dbxtop_proxy_abandon_actions_total", "Operations acted on as abandoned (--close-abandoned).", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.AbandonActions) }},
	{prometheus.NewDesc("dbxtop_proxy_evictions_total", "Finished operations evicted early because the table was full.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.Evicted) }},
	{prometheus.NewDesc("dbxtop_proxy_not_recorded_total", "Operations and sessions forwarded but not recorded: the table was full of open operations.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.NotRecorded) }},
	{prometheus.NewDesc("dbxtop_proxy_undecodable_total", "Followed calls whose request or answer the proxy could not read.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.Undecodable) }},
	{prometheus.NewDesc("dbxtop_proxy_unobserved_answers_total", "Answers in an encoding the proxy cannot decode.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.Unobserved) }},
	{prometheus.NewDesc("dbxtop_proxy_limited_total", "Requests refused with 503 by --max-conns or --max-conns-per-client after waiting --queue-wait (or with the queue full).", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.Limited) }},
	{prometheus.NewDesc("dbxtop_proxy_draining", "1 while the proxy drains (SIGTERM): /v1/ready fails and new sessions are refused.", nil, nil), prometheus.GaugeValue, func(s Stats) float64 {
		if s.Draining {
			return 1
		}
		return 0
	}},
	{prometheus.NewDesc("dbxtop_proxy_drain_refused_sessions_total", "OpenSession calls refused with 503 while draining.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.DrainRefused) }},
	{prometheus.NewDesc("dbxtop_proxy_drain_left_open_operations", "Operations still open when the drain ended (left alone for the client to continue through the next proxy).", nil, nil), prometheus.GaugeValue, func(s Stats) float64 { return float64(s.DrainLeftOpen) }},
	{prometheus.NewDesc("dbxtop_proxy_waited_total", "Requests that waited in the queue for a --max-conns or --max-conns-per-client slot.", nil, nil), prometheus.CounterValue, func(s Stats) float64 { return float64(s.Waited) }},
	{prometheus.NewDesc("dbxtop_proxy_held_operations", "Operations held (open and finished within --retain-finished).", nil, nil), prometheus.GaugeValue, func(s Stats) float64 { return float64(s.Operations) }},
	{prometheus.NewDesc("dbxtop_proxy_open_operations", "Held operations still open.", nil, nil), prometheus.GaugeValue, func(s Stats) float64 { return float64(s.OpenOperations) }},
	{prometheus.NewDesc("dbxtop_proxy_queued_closes", "Closes waiting in the close queue.", nil, nil), prometheus.GaugeValue, func(s Stats) float64 { return float64(s.QueuedCloses) }},
	{prometheus.NewDesc("dbxtop_proxy_sessions", "Client sessions held.", nil, nil), prometheus.GaugeValue, func(s Stats) float64 { return float64(s.Sessions) }},
	{prometheus.NewDesc("dbxtop_proxy_retry_budget", "Tokens left in the healing retry budget.", nil, nil), prometheus.GaugeValue, func(s Stats) float64 { return s.RetryBudget }},
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range statDescs {
		ch <- d.d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	for _, d := range statDescs {
		ch <- prometheus.MustNewConstMetric(d.d, d.typ, d.value(s))
	}
}
