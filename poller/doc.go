// Package poller follows a Databricks workspace: it discovers operations,
// keeps one model.Operation per followed statement and one
// model.Endpoint per vector endpoint up to date, raises and clears flags
// as events, runs the operator's actions (adopt, close, cancel) and the
// close queue, and hands consistent model.Snapshots to the TUI, serve and
// snapshot. Every remote call goes through the retry policy of
// poller/retry.
//
// Engine coordinates parts that each own their state and check their
// own invariants: the store (the followed operations, by id and in
// statement id order, and the live ones), the scheduler (the poll heap,
// the demand and the in-flight limit), the view cache (views, flag
// deadlines and the flags last compared), the close queue, and the
// discovery, batch and capacity rounds. Fleet puts several engines
// behind the same surface. docs/ARCHITECTURE.md walks one poll through
// them.
//
// poller imports model, sources, poller/retry and textfmt; never tui,
// report, serve, proxy, config or cmd, which sit above it, and no source
// imports it.
package poller
