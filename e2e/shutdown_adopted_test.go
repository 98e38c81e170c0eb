package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

var hostRe = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)

// TestDemoQuitNamesAdoptedStillOpen: quitting gives a queued close of an
// adopted operation one last attempt and names, by id, what is left open.
// `dbxtop demo` runs with every CloseOperation reset by the simulator; the
// test executes `SELECT 1` on it as another client and leaves it open;
// the operator adopts it (a, y): the close fails (CLOSE_FAILED, queued;
// demo closes through the Statement Execution API, hence CloseStatement);
// on q the last attempt fails too and stderr says which operation is
// still open on the server.
func TestDemoQuitNamesAdoptedStillOpen(t *testing.T) {
	t.Parallel()
	budget(t)
	const token = "dapiADOPT0123456789abcdef"
	home := t.TempDir()
	s := startTmux(t, 140, 30, home, home, "demo", "--scenario", "quiet", "--token", token,
		"--faults", "reset=1@CloseOperation,reset=1@CloseStatement", "--no-color", "--refresh", "500ms")
	host := hostRe.FindString(s.waitScreen("the workspace URL", 20*time.Second, func(scr string) bool {
		return hostRe.MatchString(scr)
	}))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rest, err := databricks.New(ctx, databricks.Config{Host: host, Token: token, UserAgent: "e2e-client"})
	if err != nil {
		t.Fatal(err)
	}
	defer rest.CloseIdleConnections()
	whs, err := rest.Warehouses(ctx, nil)
	if err != nil || len(whs) == 0 {
		t.Fatalf("warehouses: %v %v", whs, err)
	}
	client, err := thrift.NewClient(thrift.Options{Host: host, Token: token, UserAgent: "e2e-client"})
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	sess, err := client.OpenSession(ctx, whs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	op, err := client.Execute(ctx, sess, "SELECT 1", false)
	if err != nil {
		t.Fatal(err)
	}
	id := op.Ref.StatementID
	for {
		st, err := client.GetOperationStatus(ctx, op.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == model.StateFinished {
			break
		}
		if st.State.Terminal() {
			t.Fatalf("SELECT 1 ended %s", st.State)
		}
		select {
		case <-ctx.Done():
			t.Fatal("SELECT 1 never finished")
		case <-time.After(50 * time.Millisecond):
		}
	}

	s.waitScreen("the operation", 20*time.Second, func(scr string) bool { return strings.Contains(scr, id[:8]) })
	s.keys("a")
	s.waitScreen("the adopt confirmation", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "Adopt") })
	s.keys("y")
	s.waitScreen("CLOSE_FAILED", 20*time.Second, func(scr string) bool { return strings.Contains(scr, "CLOSE_FAILED") })
	s.keys("q")
	code, stderr := s.waitExit(15 * time.Second)
	want := "dbxtop demo: adopted operation " + id + " is still open on the server (its close did not succeed before exit)"
	if code != 0 || strings.TrimSpace(stderr) != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 0 and:\n%s", code, stderr, want)
	}
}
