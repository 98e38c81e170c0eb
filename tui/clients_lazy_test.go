package tui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// countingEngine is a real engine that counts how its snapshots and
// clients[] are asked for.
type countingEngine struct {
	*poller.Engine
	full, lean, clients atomic.Int32
}

func (c *countingEngine) Snapshot() model.Snapshot { c.full.Add(1); return c.Engine.Snapshot() }

func (c *countingEngine) SnapshotWithoutClients() model.Snapshot {
	c.lean.Add(1)
	return c.Engine.SnapshotWithoutClients()
}

func (c *countingEngine) Clients(s model.Snapshot) []model.ClientStats {
	c.clients.Add(1)
	return c.Engine.Clients(s)
}

// The TUI aggregates clients[] only while the Clients view shows them
// and for an export: refreshes of the other views leave them out, the
// Clients view says it is aggregating (never "no statements") until they
// come, and an export holds them whatever the view.
func TestClientsAggregatedOnlyWhenShown(t *testing.T) {
	src := &memSource{n: 30, start: time.Now().Add(-10 * time.Minute), activity: true}
	eng := poller.NewEngine(poller.Options{Discoverer: src, Status: src, ReadOnly: true, ClientsWindow: time.Hour,
		Thresholds: model.Thresholds{InactivityWarn: time.Minute, ServerIdleTimeout: 2 * time.Hour, LeakAfter: 2 * time.Minute}})
	if err := eng.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := &countingEngine{Engine: eng}
	o := testOptions()
	o.ExportDir = t.TempDir()
	m := newModel(e, o)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	for range 3 {
		refresh(m)
	}
	must(t, e.lean.Load() == 3 && e.full.Load() == 0 && e.clients.Load() == 0,
		"Operations view: %d lean, %d full snapshots, %d aggregations; want 3, 0, 0", e.lean.Load(), e.full.Load(), e.clients.Load())

	cmd := press(m, "tab", "tab", "tab")
	out := plain(m)
	must(t, strings.Contains(out, "[Clients]") && strings.Contains(out, "aggregating the recent window") &&
		!strings.Contains(out, "no statements"), "Clients view before its aggregation:\n%s", out)
	msg := run(t, m, cmd)
	_, ok := msg.(clientsMsg)
	must(t, ok, "switching to the Clients view asked for %T, want its clients[]", msg)
	out = plain(m)
	must(t, strings.Contains(out, "Databricks JDBC Driver — 1 orphan,"), "Clients view after its aggregation:\n%s", out)
	must(t, e.clients.Load() == 1, "%d aggregations, want 1", e.clients.Load())

	refresh(m) // shown: the snapshot carries them
	must(t, e.full.Load() == 1 && !m.ctx.clientsLeft && len(m.ctx.snap.Clients) > 0, "a refresh of the Clients view: %d full snapshots, left %v", e.full.Load(), m.ctx.clientsLeft)
	must(t, m.clientsFor() == nil, "clients[] asked for again while the snapshot has them")

	press(m, "tab", "tab") // through Help to Operations: an export with clients[] left out
	refresh(m)
	must(t, m.ctx.clientsLeft, "Operations again: clients[] not left out")
	exp := run(t, m, press(m, "e")).(exportDoneMsg)
	must(t, exp.err == nil, "export: %v", exp.err)
	raw, err := os.ReadFile(filepath.Join(o.ExportDir, filepath.Base(exp.paths[0])))
	must(t, err == nil, "%v", err)
	var back struct {
		Clients []model.ClientStats `json:"clients"`
	}
	must(t, json.Unmarshal(raw, &back) == nil && len(back.Clients) == 30 && back.Clients[0].Orphans == 1,
		"export's clients[] %+v, want the 30 users' with an orphan each", back.Clients)
}
