package tui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// exportDoneMsg reports the files `e` wrote.
type exportDoneMsg struct {
	paths []string
	err   error
}

// exportEvents is how many recent events the incident report lists.
const exportEvents = 100

// export writes the current snapshot as §9 JSON and a Markdown incident
// report, both mode 0600 (they name users and SQL text), in ExportDir.
func (m *Model) export() tea.Cmd {
	if !m.loaded {
		m.setStatus("export: no snapshot yet", true)
		return nil
	}
	snap := m.snap
	events := m.ring.newest(exportEvents, "")
	dir, now := m.ctx.opts.ExportDir, m.ctx.opts.Now().UTC()
	return func() tea.Msg {
		paths, err := writeExport(dir, now, snap, events)
		return exportDoneMsg{paths: paths, err: err}
	}
}

// writeExport writes dbxtop-snapshot-<time>.json and
// dbxtop-incident-<time>.md; it never overwrites a file.
func writeExport(dir string, now time.Time, snap model.Snapshot, events []poller.Event) ([]string, error) {
	stamp := now.Format("20060102T150405Z")
	js, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("export: encoding the snapshot: %w", err)
	}
	var md bytes.Buffer
	writeIncidentMarkdown(&md, now, snap, events)
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"dbxtop-snapshot-" + stamp + ".json", append(js, '\n')},
		{"dbxtop-incident-" + stamp + ".md", md.Bytes()},
	} {
		p := filepath.Join(dir, f.name)
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if err := writeFile0600(p, f.data); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeFile0600 creates path (never replacing an existing file) with mode
// 0600 whatever the umask, and writes data.
func writeFile0600(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("export: creating %s: %w", path, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("export: writing %s: %w", path, err)
	}
	return nil
}

func (m *Model) exportDone(msg exportDoneMsg) {
	if msg.err != nil {
		m.setStatus(msg.err.Error(), true)
		return
	}
	m.setStatus(fmt.Sprintf("exported %s and %s (mode 0600)", msg.paths[0], msg.paths[1]), false)
}
