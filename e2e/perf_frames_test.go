package e2e

import (
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/dbxtop/dbxtop/tui"
)

// perfFrameModel is the TUI (public API only) on a churning engine of n
// operations, sized w×h, with its first snapshot applied.
func perfFrameModel(tb testing.TB, n, w, h int) tea.Model {
	tb.Helper()
	eng := newPerfChurnEngine(n, func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
	close(eng.events) // the model's event reader returns at once
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI256)
	m := tui.New(eng, tui.Options{Renderer: r, ReadOnly: true})
	m, _ = m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	// Init is a batch: the first snapshot and the event reader.
	var apply func(tea.Cmd)
	apply = func(c tea.Cmd) {
		if c == nil {
			return
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				apply(c)
			}
		default:
			m, _ = m.Update(msg) // the returned tick is not run: one frame is measured
		}
	}
	apply(m.Init())
	if v := m.View(); len(v) < w*h/4 {
		tb.Fatalf("%d operations: the frame is %d bytes, not a table:\n%s", n, len(v), v)
	}
	return m
}

// BenchmarkFramesSideBySide measures issue 9 item 4's frame time as a
// ratio: frames of 1,000, 10,000 and 100,000 operations at 120×40 are
// rendered in turn (round-robin, 300 rounds), so a noisy machine slows all
// three alike; the medians and their ratios to 1,000 are reported. It
// complements tui's BenchmarkOperationsView, which measures each size
// alone with allocations.
//
//	go test -run '^$' -bench FramesSideBySide -benchtime 1x ./e2e/
func BenchmarkFramesSideBySide(b *testing.B) {
	sizes := []int{1000, 10000, 100000}
	models := make([]tea.Model, len(sizes))
	for i, n := range sizes {
		models[i] = perfFrameModel(b, n, 120, 40)
	}
	const rounds = 300
	times := make([][]time.Duration, len(sizes))
	for b.Loop() {
		for range rounds {
			for i, m := range models {
				// A resize is a message that redraws (Update renders the
				// frame; View hands it back), and costs nothing else.
				t0 := time.Now()
				models[i], _ = m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
				_ = models[i].View()
				times[i] = append(times[i], time.Since(t0))
			}
		}
	}
	med := make([]time.Duration, len(sizes))
	for i := range sizes {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
	}
	row := "| frame at 120×40, median of 300 interleaved rounds |"
	for i, n := range sizes {
		b.ReportMetric(float64(med[i].Microseconds())/1000, fmt.Sprintf("ms/frame@%d", n))
		row += fmt.Sprintf(" %.3f ms (%.2f×) |", float64(med[i].Microseconds())/1000, float64(med[i])/float64(med[0]))
	}
	writePerfTable(b, "frames.md", row+"\n")
}

// TestFrameSizeDoesNotGrowWithOperations: the frame drawn for 20,000
// operations is the same size as for 1,000 (only visible rows are built),
// through the public API. (20,000 keeps the test short under -race; the
// benchmark goes to 100,000.)
func TestFrameSizeDoesNotGrowWithOperations(t *testing.T) {
	budget(t)
	small := perfFrameModel(t, 1000, 120, 40).View()
	large := perfFrameModel(t, 20000, 120, 40).View()
	if d := len(large) - len(small); d > len(small)/10 || d < -len(small)/10 {
		t.Fatalf("frame is %d bytes at 1,000 operations and %d at 20,000", len(small), len(large))
	}
	if got, want := countLines(large), 40; got > want {
		t.Fatalf("frame at 120×40 has %d lines", got)
	}
}

func countLines(s string) int {
	n := 1
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
