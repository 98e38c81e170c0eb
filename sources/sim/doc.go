// Package sim is the simulated Databricks workspace: a real HTTP server on
// loopback that speaks TCLIService (Thrift over HTTP) at
// /sql/1.0/warehouses/{id} and the Databricks REST API (query history,
// statement execution, warehouses, vector search), with a workload of
// simulated clients, seeded fault injection and ground truth at
// /sim/v1/stats and /sim/v1/truth.
//
// dbxtop runs and is tested against it with no account. Driver authors can
// also use it to reproduce the orphan (abandoned poll) and leak (lost
// CloseOperation) bugs. See docs/simulator.md.
//
// It imports only sources, sources/thrift, model and textfmt from dbxtop,
// never poller, proxy, serve or config: cmd wires an embedded proxy to it.
package sim
