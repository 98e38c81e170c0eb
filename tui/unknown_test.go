package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
)

// TestUnknownShownAsUnknown: where dbxtop cannot know whether another
// client's operation is still open (an end from query history, no handle
// it can ask with) or when its client last called, the CLOSE and IDLE
// cells say "?" — never "-", which reads as nothing to see — and the
// detail says why and that the proxy would tell.
func TestUnknownShownAsUnknown(t *testing.T) {
	closed := false
	ops := []model.Operation{
		{StatementID: "01ef-unknown-open", WarehouseID: "wh-1", User: "etl", ClientApplication: "JDBC", SQL: "SELECT 1",
			State: model.StateFinished, StartedAt: fixedNow.Add(-3 * time.Minute), CompletedAt: fixedNow.Add(-time.Minute),
			FirstSeenAt: fixedNow.Add(-3 * time.Minute), LastPollOKAt: fixedNow, StatusSource: model.StatusViaHistory},
		{StatementID: "01ef-known-closed", WarehouseID: "wh-1", User: "etl", ClientApplication: "JDBC", SQL: "SELECT 2",
			State: model.StateFinished, StartedAt: fixedNow.Add(-3 * time.Minute), CompletedAt: fixedNow.Add(-time.Minute),
			FirstSeenAt: fixedNow.Add(-3 * time.Minute), LastPollOKAt: fixedNow, Open: &closed, StatusSource: model.StatusViaThrift},
		{StatementID: "01ef-running", WarehouseID: "wh-1", User: "etl", ClientApplication: "JDBC", SQL: "SELECT 3",
			State: model.StateRunning, StartedAt: fixedNow.Add(-time.Minute), FirstSeenAt: fixedNow.Add(-time.Minute), LastPollOKAt: fixedNow},
		// Proxied, and the proxy's proof that it is open aged out.
		{StatementID: "01ef-proxied-unknown", WarehouseID: "wh-1", User: "etl", ClientApplication: "JDBC", SQL: "SELECT 4",
			State: model.StateFinished, StartedAt: fixedNow.Add(-20 * time.Minute), CompletedAt: fixedNow.Add(-19 * time.Minute),
			FirstSeenAt: fixedNow.Add(-20 * time.Minute), LastPollOKAt: fixedNow, StatusSource: model.StatusViaHistory,
			StatusNote: "open per dbxtop proxy until 12:00:00: … may have closed it since", Proxy: &model.ProxyAccount{CloseOutcome: "open"}},
	}
	snap := model.NewSnapshot(fixedNow, model.Workspace{Host: "h"}, ops, nil, nil, model.DefaultThresholds)
	m := syncModel(t, newFakeEngine(snap), testOptions(), 200, 30)
	press(m, "d") // finished rows are collapsed unless asked for
	cells := func(id string) []string {
		for _, l := range strings.Split(plain(m), "\n") {
			if strings.Contains(l, id) {
				return strings.Fields(l)
			}
		}
		t.Fatalf("no row for %s:\n%s", id, plain(m))
		return nil
	}
	if c := cells("SELECT 1"); !strings.Contains(strings.Join(c, " "), " - ? 0 ") {
		t.Errorf("ended, openness unknown: CLOSE is not ?: %q", c)
	}
	if c := cells("SELECT 2"); strings.Contains(strings.Join(c, " "), "?") {
		t.Errorf("ended and known closed: a ? in %q", c)
	}
	if c := cells("SELECT 3"); !strings.Contains(strings.Join(c, " "), " ? - 0 ") {
		t.Errorf("running, client activity unknown: IDLE is not ?: %q", c)
	}

	for _, tc := range []struct {
		name string
		id   string // picked with the filter, whatever the order
		want []string
	}{
		{"ended, openness unknown", "01ef-unknown-open", []string{"01ef-unknown-open", "open on server", "query history does not tell", "dbxtop proxy", "would tell"}},
		{"proxied, openness unknown", "01ef-proxied-unknown", []string{"open on server", "neither the server nor dbxtop proxy's account tells", "may have closed it since"}},
		{"running, activity unknown", "01ef-running", []string{"01ef-running", "client idle", "no server API tells when the owning client last called", "dbxtop proxy"}},
	} {
		m := syncModel(t, newFakeEngine(snap), testOptions(), 120, 40)
		press(m, "d", "/")
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(tc.id)})
		press(m, "enter", "g", "enter")
		screen := strings.Join(strings.Fields(plain(m)), " ")
		for _, w := range tc.want {
			if !strings.Contains(screen, w) {
				t.Errorf("%s: the detail lacks %q:\n%s", tc.name, w, plain(m))
			}
		}
		if tc.id == "01ef-proxied-unknown" && strings.Contains(screen, "would tell") {
			t.Errorf("%s: the detail says the proxy would tell, with the proxy's account on the row:\n%s", tc.name, plain(m))
		}
	}
}
