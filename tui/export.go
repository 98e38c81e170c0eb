package tui

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

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
	m.ctx.setStatus(exportStatus(msg.paths[0], msg.paths[1], m.ctx.width, m.ctx.glyphs.Ellipsis), false)
}

// exportStatus names both files; when the line is too wide for w, the
// directory is shortened from the left ("…/incidents"), the mode note
// goes, and at last the names share their prefix in shell brace form
// (dbxtop-{snapshot-….json,incident-….md}), which still names each
// file exactly. A file is never left out.
func exportStatus(a, b string, w int, ell string) string {
	full := fmt.Sprintf("exported %s and %s (mode 0600)", a, b)
	da, fa := filepath.Split(a)
	db, fb := filepath.Split(b)
	if da != db || ansi.StringWidth(full) <= w {
		return full
	}
	dirs := []string{filepath.Clean(da)}
	parts := strings.Split(filepath.Clean(da), string(filepath.Separator))
	for i := 1; i < len(parts); i++ {
		dirs = append(dirs, ell+string(filepath.Separator)+filepath.Join(parts[i:]...))
	}
	dirs = append(dirs, ell)
	p := 0 // common prefix of the names, for the brace form
	for p < min(len(fa), len(fb)) && fa[p] == fb[p] {
		p++
	}
	braced := fa[:p] + "{" + fa[p:] + "," + fb[p:] + "}"
	forms := []func(d string) string{
		func(d string) string { return fmt.Sprintf("exported %s and %s in %s (mode 0600)", fa, fb, d) },
		func(d string) string { return fmt.Sprintf("exported %s and %s in %s", fa, fb, d) },
		func(d string) string { return fmt.Sprintf("exported %s in %s", braced, d) },
		func(d string) string { return fmt.Sprintf("wrote %s in %s", braced, d) },
	}
	var last string
	for _, f := range forms {
		for _, d := range dirs {
			if last = f(d); ansi.StringWidth(last) <= w {
				return last
			}
		}
	}
	return last
}
