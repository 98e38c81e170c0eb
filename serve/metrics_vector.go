package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbxtop/dbxtop/poller"
)

// proxiedCollector exports what a dbxtop proxy reported of the clients'
// Vector Search writes (--proxy, docs/proxy-vector.md): capacity
// refusals as a counter (it restarts with the proxy, which Prometheus
// reads as a counter reset) and the rows written through the proxy per
// second. Endpoints without a proxy's account have no series.
type proxiedCollector struct {
	fleet             *poller.Fleet
	refusals, written *prometheus.Desc
}

func newProxiedCollector(f *poller.Fleet) *proxiedCollector {
	return &proxiedCollector{fleet: f,
		refusals: prometheus.NewDesc("dbxtop_endpoint_capacity_refusals_total",
			"Client upserts refused for the Vector Search endpoint's capacity (429 RESOURCE_EXHAUSTED about capacity), as a dbxtop proxy saw them since it started.",
			[]string{"workspace", "endpoint"}, nil),
		written: prometheus.NewDesc("dbxtop_endpoint_proxied_written_rows_per_second",
			"Rows per second the clients wrote to a Vector Search endpoint's indexes through a dbxtop proxy, averaged over the last minute (from the server's answers).",
			[]string{"workspace", "endpoint"}, nil),
	}
}

func (c *proxiedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.refusals
	ch <- c.written
}

func (c *proxiedCollector) Collect(ch chan<- prometheus.Metric) {
	for _, ws := range c.fleet.Snapshots() {
		for _, e := range ws.Endpoints {
			if e.Proxied == nil {
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.refusals, prometheus.CounterValue, float64(e.Proxied.CapacityRefusals), ws.Name, label(e.Name))
			ch <- prometheus.MustNewConstMetric(c.written, prometheus.GaugeValue, e.Proxied.WrittenPerMin/60, ws.Name, label(e.Name))
		}
	}
}
