// Package thrift speaks HiveServer2 / Databricks SQL TCLIService over HTTP
// with TBinaryProtocol: a client that is also a poller source, and an HTTP
// handler that serves the same generated processor for the simulator.
//
// The generated code in gen/tcliservice comes from our own subset IDL in
// idl/TCLIService.thrift and is committed, so builds never need the
// compiler. Regenerate with `go generate ./sources/thrift/` (Debian
// thrift-compiler 0.17; the output builds with github.com/apache/thrift
// v0.17 … v0.25, pinned to v0.23.0 in go.mod).
//
// It imports only sources, model and textfmt from dbxtop, never poller,
// proxy, tui or cmd.
package thrift

//go:generate thrift -r --gen go:package_prefix=github.com/dbxtop/dbxtop/sources/thrift/gen/,thrift_import=github.com/apache/thrift/lib/go/thrift -out gen idl/TCLIService.thrift
//go:generate rm -rf gen/tcliservice/t_c_l_i_service-remote
//go:generate gofmt -w gen
