// Package model is dbxtop's domain: operations and their normalised
// states (the Thrift, Statement Execution and query-history mappings),
// endpoints and indexes, flags and their evaluation (inactivity, the
// reaper countdown, capacity), events, the Snapshot and its JSON
// (docs/model.md), and the one order and filter of operations that every
// view uses (SortOperations, FilterSpec).
//
// It is pure: no I/O, no goroutines, no clock of its own (now is always a
// parameter). It imports only textfmt from dbxtop, never poller, sources,
// report, tui, serve or cmd: the layers above read it, it reads none of
// them (docs/ARCHITECTURE.md, "Allowed imports").
package model
