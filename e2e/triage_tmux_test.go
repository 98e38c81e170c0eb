package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// TestEveryViewInSmallPanes runs `dbxtop demo` in an 80×23 pane (an
// 80×24 tmux window under its status bar) and in a 60×20 one, the
// smallest size, and visits every view: each draws its header, its body
// and its footer, never the too-small message. (Goldens cover every view
// at these sizes in tui.TestGolden.)
func TestEveryViewInSmallPanes(t *testing.T) {
	t.Parallel()
	budget(t)
	for _, sz := range [][2]int{{80, 23}, {60, 20}} {
		home := t.TempDir()
		s := startTmux(t, sz[0], sz[1], home, home, "demo", "--no-color")
		s.waitScreen("the first operations", 60*time.Second, func(scr string) bool { return strings.Contains(scr, "RUNNING") })
		for _, v := range []struct{ tab, body string }{
			{"[Endpoints]", "ENDPOINT"}, {"[Events]", "TIME"}, {"[Clients]", "CLIENT APPLICATI"}, {"[Warehouses]", "QUEUED"}, {"[Help]", "Move"}, {"[Operations]", "STATEMENT"},
		} {
			s.keys("Tab")
			scr := s.waitScreen(v.tab, 10*time.Second, func(scr string) bool { return strings.Contains(scr, v.tab) && strings.Contains(scr, v.body) })
			checkSmallScreen(t, sz, v.tab, scr)
		}
		s.keys("Enter")
		checkSmallScreen(t, sz, "detail", s.waitScreen("the detail", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "Operation ") }))
		s.keys("q")
		if code, stderr := s.waitExit(15 * time.Second); code != 0 || stderr != "" {
			t.Errorf("%v: exit %d, stderr %q", sz, code, stderr)
		}
	}
}

func checkSmallScreen(t *testing.T, sz [2]int, what, scr string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
	if strings.Contains(scr, "terminal too small") || !strings.HasPrefix(lines[0], "dbxtop") ||
		!strings.Contains(lines[0], "updated") || !strings.Contains(lines[len(lines)-1], "quit") {
		t.Errorf("%v %s: header (with updated), body or footer missing:\n%s", sz, what, scr)
	}
}

// TestTriageInTmux drives the triage path end to end on `dbxtop demo` at
// 80×23: Clients → enter on the leaking client → its operations → the
// set action (C) → confirm → each operation re-closed, Events showing
// each outcome, and the simulator confirming the closes.
//
// The demo runs its quiet scenario with lenient handles, and a leaky
// Thrift client of the test's connects to its simulator: in the default
// demo the only UNCLOSED leaks are its proxied client's, whose closes the
// embedded proxy refuses ("no credentials to act with": docs/proxy.md,
// "Whose credentials"), so no re-close could succeed there.
func TestTriageInTmux(t *testing.T) {
	t.Parallel()
	budget(t)
	const token = "dapiTRIAGE0123456789abcdef"
	home := t.TempDir()
	s := startTmux(t, 80, 23, home, home, "demo", "--scenario", "quiet", "--check-handle-secrets=false", "--token", token,
		"--warehouses", "1", "--no-color", "--refresh", "1s", "--leak-after", "2s")
	scr := s.waitScreen("the demo's address", 30*time.Second, func(scr string) bool { return strings.Contains(scr, "http://127.0.0.1:") })
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(scr)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	owner, err := thrift.NewClient(thrift.Options{Host: url, Token: token, UserAgent: "LeakyDriver/1.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.CloseIdleConnections)
	sess, err := owner.OpenSession(ctx, demoWarehouse(ctx, t, url, token))
	if err != nil {
		t.Fatal(err)
	}
	ids := leakEnded(ctx, t, owner, sess, 3)

	s.waitScreen("the leaks flagged", 30*time.Second, func(scr string) bool { return strings.Contains(scr, "UNCLOSED 3") })
	s.keys("Tab", "Tab", "Tab")
	s.waitScreen("Clients", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "[Clients]") })
	s.keys("/")
	s.keys("-l", "leaky")
	s.keys("Enter")
	leaking := regexp.MustCompile(`(?m)^❯ LeakyDriver .* 3 +0 +3 `) // 3 statements, no orphan, 3 leaks
	s.waitScreen("the leaking client selected", 20*time.Second, leaking.MatchString)
	s.keys("Enter")
	s.waitScreen("its UNCLOSED operations", 15*time.Second, func(scr string) bool {
		return strings.Count(scr, "UNCLOSED") >= 3 && strings.Contains(scr, "esc returns to Clients")
	})
	// snapshot --filter with the same filter keeps exactly the rows the
	// TUI lists (short ids on screen, whole ones in the JSON).
	const filter = "client:leakydriver flag:UNCLOSED"
	s.keys("/")
	s.keys("C-u")
	s.keys("-l", filter)
	s.keys("Enter")
	scr = s.waitScreen("the same filter typed", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "filter "+strings.ToLower(filter)) })
	shown := regexp.MustCompile(`(?m)^. ▲ WARN UNCLOSED +([0-9a-f]{8})…`).FindAllStringSubmatch(scr, -1)
	r := run(t, runOpts{args: []string{"snapshot", "--json", "--host", url, "--leak-after", "2s", "--filter", filter},
		env: []string{"DATABRICKS_TOKEN=" + token}, timeout: 30 * time.Second})
	var snap struct {
		Operations []struct {
			ID string `json:"statement_id"`
		} `json:"operations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &snap); err != nil {
		t.Fatalf("snapshot --filter: %v\n%s", err, r)
	}
	var tuiIDs, snapIDs []string
	for _, m := range shown {
		tuiIDs = append(tuiIDs, m[1])
	}
	for _, o := range snap.Operations {
		snapIDs = append(snapIDs, o.ID[:8])
	}
	slices.Sort(tuiIDs)
	slices.Sort(snapIDs)
	if len(tuiIDs) != len(ids) || !slices.Equal(tuiIDs, snapIDs) {
		t.Fatalf("the TUI lists %v for %q, snapshot --filter %v (exit %d):\n%s", tuiIDs, filter, snapIDs, r.code, scr)
	}
	if r.code != 1 && r.code != 2 {
		t.Errorf("snapshot --filter exit %d, want 1 or 2: the kept operations are UNCLOSED", r.code)
	}
	s.keys("C")
	scr = s.waitScreen("the set dialog", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "Re-close 3 UNCLOSED operations") })
	for _, want := range []string{"LeakyDriver", "CloseOperation", "cannot"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the dialog does not say %q:\n%s", want, scr)
		}
	}
	s.keys("y")
	s.waitScreen("the set action done", 30*time.Second, func(scr string) bool { return strings.Contains(scr, "Re-close (set): done") })
	s.keys("Tab", "Tab")
	s.waitScreen("Events", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "[Events]") })
	for _, id := range ids {
		s.keys("/")
		s.keys("-l", id[:8])
		s.keys("Enter")
		s.waitScreen("the outcome of "+id, 10*time.Second, func(scr string) bool { return strings.Contains(scr, "Re-close: closed") })
		s.keys("Escape")
	}
	var st sim.Stats
	demoGet(ctx, t, url+"/sim/v1/stats", token, &st)
	if n := st.ObserverRequests["CloseOperation"]; n < int64(len(ids)) {
		t.Errorf("the simulator saw %d CloseOperation from dbxtop, want %d", n, len(ids))
	}
	s.keys("q")
	if code, stderr := s.waitExit(20 * time.Second); code != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// demoWarehouse is the id of the demo simulator's first warehouse, from
// its REST listing.
func demoWarehouse(ctx context.Context, t *testing.T, url, token string) string {
	t.Helper()
	var body struct {
		Warehouses []struct {
			ID string `json:"id"`
		} `json:"warehouses"`
	}
	demoGet(ctx, t, url+"/api/2.0/sql/warehouses", token, &body)
	if len(body.Warehouses) == 0 {
		t.Fatal("the demo lists no warehouse")
	}
	return body.Warehouses[0].ID
}

// demoGet decodes the JSON answer to a GET of url into v.
func demoGet(ctx context.Context, t *testing.T, url, token string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
