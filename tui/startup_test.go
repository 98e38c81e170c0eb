package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Until the first answer the screen says what it waits for, with the
// time waited, never "no operations", and the header never says "last
// error: none" while retries are being made.
func TestStartupSaysWhatItWaitsFor(t *testing.T) {
	now := fixedNow
	o := testOptions()
	o.Now = func() time.Time { return now }
	e := newFakeEngine(model.Snapshot{GeneratedAt: fixedNow})
	e.health = model.Health{Waiting: "authenticating to https://adb-1.example (gives up after 15s, --auth-timeout)"}
	m := syncModel(t, e, o, 80, 24)
	now = now.Add(4 * time.Second)
	refresh(m)
	screen := strings.Join(strings.Fields(plain(m)), " ")
	must(t, strings.Contains(screen, "authenticating to https://adb-1.example") && strings.Contains(screen, "nothing is known yet (4s)"),
		"screen:\n%s", plain(m))
	must(t, !strings.Contains(screen, "no operations"), "says no operations:\n%s", plain(m))

	e.health = model.Health{}
	refresh(m)
	screen = strings.Join(strings.Fields(plain(m)), " ")
	must(t, strings.Contains(screen, "waiting for the first listing of operations (4s)") && !strings.Contains(screen, "no operations"),
		"screen:\n%s", plain(m))

	e.health = model.Health{Retries: 10, LastRetry: &model.ErrorInfo{Kind: model.KindTransport, Call: "ListQueries", Message: "dial tcp 127.0.0.1:1: connection refused"}}
	refresh(m)
	screen = strings.Join(strings.Fields(plain(m)), " ")
	must(t, strings.Contains(screen, "the last attempt:") && strings.Contains(screen, "connection refused"), "no cause while retrying:\n%s", plain(m))
	lines := strings.Split(plain(m), "\n")
	must(t, strings.TrimSpace(lines[2]) != "last error: none" && strings.Contains(lines[2], "none given up yet (10 retries"),
		"header says no error while retrying:\n%s", plain(m))
}
