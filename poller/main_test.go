package poller

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	verifyViews = true // every change to an operation is touched (viewOf)
	code := m.Run()
	if msg := viewViolation.Load(); msg != nil {
		fmt.Fprintln(os.Stderr, *msg)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkViews fails t when the engine trusted a view that a comparison
// would have changed (verifyViews): called when a test's engine stops.
func checkViews(t testing.TB) {
	t.Helper()
	if msg := viewViolation.Swap(nil); msg != nil {
		t.Error(*msg)
	}
}
