// Package conformance proves the simulated workspace (sources/sim) faithful
// by driving it with independent, unmodified clients: the official Go SQL
// driver (github.com/databricks/databricks-sql-go v1.14.0) over Thrift and
// the official Go SDK (github.com/databricks/databricks-sdk-go v0.182.0)
// over REST. It also measures the peer comparisons of issue 9 (time to a
// truthful error, operations orphaned under faults).
//
// It is a nested module because the SQL driver drags in Arrow and friends,
// which the product must not depend on. Everything here is a test; this
// file only gives the package a name and documentation.
//
// Long runs (the stock SDK's 300 s anchor, 200 concurrent statements) are
// behind DBXTOP_LONG=1; see docs/conformance.md.
package conformance
