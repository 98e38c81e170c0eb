package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestReadOnlyRefusesActions is the bad input "an action in read-only
// mode", end to end through the engine the TUI drives: a real simulator
// on loopback holds a running statement; an engine built as `dbxtop
// --read-only` builds it refuses adopt, close and cancel with
// poller.ErrReadOnly, and the server receives no CloseOperation or
// CancelOperation at all. (The TUI side — the keys do nothing and are
// hidden — is tui.TestReadOnlyKeysDoNothingAndAreHidden; the refusal text
// shown on screen is checked there too.)
func TestReadOnlyRefusesActions(t *testing.T) {
	t.Parallel()
	budget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := sim.Start(ctx, sim.Options{Scenario: sim.ScenarioQuiet, Token: "dapiRO0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		if err := srv.Close(sctx); err != nil {
			t.Errorf("sim close: %v", err)
		}
	}()

	// Another client holds a long statement (the operation to act on).
	owner, err := thrift.NewClient(thrift.Options{Host: srv.URL(), Token: srv.Token(), UserAgent: "e2e-owner"})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.CloseIdleConnections()
	wh := srv.WarehouseIDs()[0]
	sess, err := owner.OpenSession(ctx, wh)
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

	// dbxtop's side, wired as cmd/wire.go wires `dbxtop demo --read-only`.
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
		Discoverer: rest,
		Status:     databricks.StatusWithFallback(tc, rest),
		Actions:    tc,
		Thresholds: model.DefaultThresholds,
		ReadOnly:   true,
		Workspace:  model.Workspace{Host: rest.Host()},
		Idle:       []sources.IdleCloser{rest, tc},
	})
	if err := eng.RunOnce(ctx); err != nil {
		t.Fatalf("observe: %v", err)
	}
	found := false
	for _, o := range eng.Snapshot().Operations {
		found = found || o.StatementID == id
	}
	if !found {
		t.Fatalf("the engine does not follow %s: %+v", id, eng.Snapshot().Operations)
	}
	for name, act := range map[string]func(context.Context, string) error{
		"adopt": eng.Adopt, "close": eng.Close, "cancel": eng.Cancel,
	} {
		err := act(ctx, id)
		if !errors.Is(err, poller.ErrReadOnly) {
			t.Errorf("%s: %v, want poller.ErrReadOnly", name, err)
		}
		if err != nil && err.Error() != "read-only mode: dbxtop refuses to change anything on the server" {
			t.Errorf("%s: message %q", name, err)
		}
	}
	left := eng.Shutdown(ctx) // nothing adopted: nothing to close at exit
	if len(left) != 0 {
		t.Errorf("shutdown left %v", left)
	}
	st := srv.Stats()
	if n := st.Requests["CloseOperation"] + st.Requests["CancelOperation"] + st.Requests["CloseStatement"] + st.Requests["CancelExecution"]; n != 0 {
		t.Errorf("a read-only engine sent %d close/cancel requests: %v", n, st.Requests)
	}
	for _, o := range srv.Truth().Operations {
		if o.StatementID == id && (!o.Open || (o.State != "RUNNING" && o.State != "PENDING")) {
			t.Errorf("operation changed on the server: %+v", o)
		}
	}
}
