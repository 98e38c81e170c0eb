package proxy

import (
	"testing"

	"go.uber.org/goleak"
)

// The SDK (dbxtop's REST client in merge_test.go) starts opencensus'
// package-level worker at init; it is not ours to stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}
