package conformance

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	dbsqllog "github.com/databricks/databricks-sql-go/logger"
	"go.uber.org/goleak"

	"github.com/dbxtop/dbxtop/cmd"
)

func TestMain(m *testing.M) {
	// The test binary re-executed as `dbxtop proxy` (startProxyProcess):
	// a process of its own that a test can SIGTERM or kill -9.
	if args := os.Getenv(proxyProcessArgs); args != "" {
		// As main.go does: SIGTERM ends the command (the drain).
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		go func() { <-ctx.Done(); stop() }()
		os.Exit(cmd.ExecuteContext(ctx, strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	// The stock SDK resolves unified auth from the environment and
	// ~/.databrickscfg; a developer's real profile must neither leak into
	// nor be contacted by these tests.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "DATABRICKS_") {
			os.Unsetenv(k)
		}
	}
	// The driver logs every failed request at error level to stderr; the
	// tests report what matters themselves.
	_ = dbsqllog.SetLogLevel("disabled")

	home, err := os.MkdirTemp("", "conformance-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	goleak.VerifyTestMain(m,
		// Started by an init() of go.opencensus.io, a dependency of the
		// SDK's Google auth: process-wide, not started by any test.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		// databricks-sql-go v1.14.0 sets http.Client.Timeout to 900 s and
		// the Thrift HTTP transport keeps the last response body of each
		// session unread until its next call; after CloseSession there is
		// no next call, so net/http's timeout goroutine waits out the 900 s.
		// A driver leak (reported in docs/conformance.md), not ours.
		goleak.IgnoreTopFunction("net/http.setRequestCancel.func4"),
		goleak.Cleanup(func(code int) {
			os.RemoveAll(home)
			os.Exit(code)
		}))
}
