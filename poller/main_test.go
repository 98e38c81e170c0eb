package poller

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkEngine reports the first broken invariant of e's parts: the
// store, the scheduler and the view cache each check their own.
func checkEngine(e *Engine) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.sched.check(); err != nil {
		return err
	}
	return e.book.check(e.clk.Now())
}
