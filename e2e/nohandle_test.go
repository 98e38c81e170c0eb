package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestActionWithoutAHandleSaysSo: on a server that checks handle secrets
// (the simulator by default, as HiveServer2 does), dbxtop
// holds no usable handle for another client's operation. Cancel and close
// say so in one line, naming who holds the handle (the client, or the
// proxy), instead of a bare INVALID_HANDLE; and they change nothing.
func TestActionWithoutAHandleSaysSo(t *testing.T) {
	t.Parallel()
	budget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := startSimServer(t, sim.Options{Scenario: sim.ScenarioQuiet})
	owner, err := thrift.NewClient(thrift.Options{Host: srv.URL(), Token: srv.Token(), UserAgent: "e2e-owner"})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.CloseIdleConnections()
	sess, err := owner.OpenSession(ctx, srv.WarehouseIDs()[0])
	if err != nil {
		t.Fatal(err)
	}
	op, err := owner.Execute(ctx, sess, "SELECT sleep(60)", false)
	if err != nil {
		t.Fatal(err)
	}
	id := op.Ref.StatementID
	defer func() {
		_ = owner.CancelOperation(context.Background(), op.Ref)
		_ = owner.CloseOperation(context.Background(), op.Ref)
		_ = owner.CloseSession(context.Background(), sess)
	}()

	// dbxtop's side, wired as cmd/wire.go wires it (no proxy).
	rest, err := databricks.New(ctx, databricks.Config{Host: srv.URL(), Token: srv.Token(), UserAgent: "dbxtop/e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer rest.CloseIdleConnections()
	tc, err := thrift.NewClient(thrift.Options{Host: rest.Host(), Authenticate: rest.Authenticate, UserAgent: "dbxtop/e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.CloseIdleConnections()
	eng := poller.NewEngine(poller.Options{
		Discoverer: rest, Status: databricks.StatusWithFallback(tc, rest), Actions: tc,
		Thresholds: model.DefaultThresholds, Workspace: model.Workspace{Host: rest.Host()},
		Idle: []sources.IdleCloser{rest, tc},
	})
	if err := eng.RunOnce(ctx); err != nil {
		t.Fatalf("observe: %v", err)
	}
	for name, act := range map[string]func(context.Context, string) error{"cancel": eng.Cancel, "close": eng.Close} {
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		err := act(actx, id)
		acancel()
		var nh *poller.NoHandleError
		if !errors.As(err, &nh) {
			t.Errorf("%s: %v, want a NoHandleError", name, err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, name+" refused: dbxtop does not hold this operation's handle") ||
			!strings.Contains(msg, "dbxtop proxy") {
			t.Errorf("%s: %q, want one line naming the handle and the proxy", name, msg)
		}
	}
	for _, o := range srv.Truth().Operations {
		if o.StatementID == id && (!o.Open || (o.State != "RUNNING" && o.State != "PENDING")) {
			t.Errorf("the operation changed on the server: %+v", o)
		}
	}
	eng.Shutdown(ctx)
}
