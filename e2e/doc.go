// Package e2e holds dbxtop's end-to-end tests: they build the real binary
// once (TestMain) and run it as an operator would, against the simulated
// workspace on loopback, asserting exit statuses, exact messages, that no
// secret leaks into any output, and that signals end a run promptly.
//
// The package has no non-test code. Run it with
//
//	go test -race ./e2e/
//
// Set DBXTOP_BIN to a prebuilt binary to skip the build, and DBXTOP_LONG=1
// for the long variants. See docs/reliability.md for the figures.
//
// Every test starts with budget(t): it may take 60 s on an idle machine
// unless overBudget (budget_test.go) gives it more and says why, and the
// package 12 minutes; a test or the package fails only past 4 times its
// budget (DBXTOP_E2E_SLACK), the allowance for a loaded machine, and the
// watchdog then names the tests still running.
//
// Tests only: it may import any package, and none imports it.
package e2e
