package tui

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/report"
)

// exportDoneMsg reports the files `e` wrote.
type exportDoneMsg struct {
	paths []string
	err   error
}

// exportEvents is how many recent events the incident report lists.
const exportEvents = 100

// export writes the current snapshot as snapshot JSON and a Markdown incident
// report, both mode 0600 (they name users and SQL text), in ExportDir.
func (m *Model) export() tea.Cmd {
	if !m.ctx.loaded {
		m.ctx.setStatus("export: no snapshot yet", true)
		return nil
	}
	snap := m.ctx.snap
	events := m.ctx.ring.newest(exportEvents, "")
	dir, now := m.ctx.opts.ExportDir, m.ctx.opts.Now().UTC()
	return func() tea.Msg {
		paths, err := writeExport(dir, now, snap, events)
		return exportDoneMsg{paths: paths, err: err}
	}
}

// writeExport writes dbxtop-snapshot-<time>.json (the snapshot JSON object, as
// `snapshot --json` prints it) and dbxtop-incident-<time>.md, through
// report's atomic 0600 writer.
func writeExport(dir string, now time.Time, snap model.Snapshot, events []model.Event) ([]string, error) {
	stamp := now.Format("20060102T150405Z")
	var js, md bytes.Buffer
	if err := report.JSON(&js, snap); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := report.Markdown(&md, snap, events); err != nil {
		return nil, fmt.Errorf("export: incident report: %w", err)
	}
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"dbxtop-snapshot-" + stamp + ".json", js.Bytes()},
		{"dbxtop-incident-" + stamp + ".md", md.Bytes()},
	} {
		p := filepath.Join(dir, f.name)
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if err := report.WriteFile0600(p, f.data); err != nil {
			return paths, fmt.Errorf("export: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func (m *Model) exportDone(msg exportDoneMsg) {
	if msg.err != nil {
		m.ctx.setStatus(msg.err.Error(), true)
		return
	}
	m.ctx.setStatus(fmt.Sprintf("exported %s and %s (mode 0600)", msg.paths[0], msg.paths[1]), false)
}
