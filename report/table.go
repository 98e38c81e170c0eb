package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// TableOptions tune the human table. The zero value is plain text for a
// pipe or a log: no colour, Unicode allowed, 120 columns, every operation.
type TableOptions struct {
	// ASCII restricts output to 7-bit ASCII (--ascii): "..." instead of
	// "…", non-ASCII text from the server shown as "?".
	ASCII bool
	// Color adds ANSI colour to the severity column. The caller sets it
	// only when stdout is a terminal and neither --no-color nor NO_COLOR
	// applies; the severity is always spelled out, colour only repeats it.
	Color bool
	// Width is the line width the table is fitted to; 0 → 100 (what a
	// pipe or a log gets). Columns that do not fit are left out, least
	// useful first, and a line says which.
	Width int
	// Wide keeps every column and never cuts the last one (--wide).
	Wide bool
	// MaxOperations bounds the operation rows (flagged ones come first, so
	// they are never cut before an unflagged one); 0 → all.
	MaxOperations int
}

const (
	ansiRed    = "\x1b[31;1m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// Table writes the human summary of a snapshot: a header with the
// workspace and counts, the operations (flagged first, most severe first),
// the flag details, the endpoints with their capacity, and the errors met
// while observing, each with its request id.
func Table(w io.Writer, s model.Snapshot, opt TableOptions) error {
	if opt.Width <= 0 {
		opt.Width = 100
	}
	tw := &errWriter{w: w}
	writeHeader(tw, s, opt)
	writeOperations(tw, s, opt)
	writeEndpoints(tw, s, opt)
	writeErrors(tw, s, opt)
	return tw.err
}

// errWriter keeps the first write error so the renderers stay linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

func writeHeader(w *errWriter, s model.Snapshot, opt TableOptions) {
	sum := s.Summary()
	whs := "all visible"
	if len(s.Workspace.Warehouses) > 0 {
		whs = strings.Join(s.Workspace.Warehouses, ", ")
	}
	// Pieces packed into lines of the width (--wide: two lines as they
	// come); a piece is never cut.
	pack := func(pieces ...string) {
		line := ""
		for _, p := range pieces {
			switch {
			case line == "":
				line = p
			case opt.Wide || width(line)+2+width(p) <= opt.Width:
				line += "  " + p
			default:
				w.printf("%s\n", line)
				line = p
			}
		}
		w.printf("%s\n", line)
	}
	pack("dbxtop snapshot", s.GeneratedAt.UTC().Format(time.RFC3339), "host "+clean(s.Workspace.Host, opt.ASCII), "warehouses "+clean(whs, opt.ASCII))
	pack(fmt.Sprintf("operations %d (running %d, flagged %d)", sum.Operations, sum.Running, sum.Flagged),
		fmt.Sprintf("warnings %d", sum.Warnings), fmt.Sprintf("critical %d", sum.Critical),
		fmt.Sprintf("endpoints %d (exhausted %d)", sum.Endpoints, sum.EndpointsExhausted), fmt.Sprintf("errors %d", len(s.Errors)))
}

// shortIDLen is how much of a statement id the table shows without
// --wide; idLen lengthens it where two ids would read the same (ids of
// statements started together share their leading digits).
const shortIDLen = 8

// idLen is the shortest prefix length, at least shortIDLen, that tells
// every id in ops apart; 0 (whole ids) with --wide.
func idLen(ops []*model.OperationView, opt TableOptions) int {
	if opt.Wide {
		return 0
	}
	for n := shortIDLen; ; n++ {
		seen := make(map[string]bool, len(ops))
		unique, longest := true, 0
		for _, o := range ops {
			id := o.StatementID
			longest = max(longest, len(id))
			p := id[:min(n, len(id))]
			if seen[p] {
				unique = false
				break
			}
			seen[p] = true
		}
		if unique || n >= longest {
			return n
		}
	}
}

// stmtID is the statement id as the table shows it (n from idLen).
func stmtID(id string, n int, opt TableOptions) string {
	if n > 0 && len(id) > n {
		id = id[:n]
	}
	return clean(id, opt.ASCII)
}

// flaggedFirst keeps the snapshot's order within each group.
func flaggedFirst(ops []*model.OperationView) []*model.OperationView {
	out := make([]*model.OperationView, 0, len(ops))
	for _, o := range ops {
		if len(o.Flags) > 0 {
			out = append(out, o)
		}
	}
	for _, o := range ops {
		if len(o.Flags) == 0 {
			out = append(out, o)
		}
	}
	return out
}

func sevLabel(s model.Severity) string {
	switch s {
	case model.SeverityCritical:
		return "CRIT"
	case model.SeverityWarning:
		return "WARN"
	}
	return "ok"
}

func colourSev(label string, s model.Severity, opt TableOptions) string {
	if !opt.Color {
		return label
	}
	switch s {
	case model.SeverityCritical:
		return ansiRed + label + ansiReset
	case model.SeverityWarning:
		return ansiYellow + label + ansiReset
	}
	return label
}

func flagKinds(flags []model.Flag) string {
	if len(flags) == 0 {
		return "-"
	}
	kinds := make([]string, len(flags))
	for i, f := range flags {
		kinds[i] = string(f.Kind)
	}
	return strings.Join(kinds, ",")
}

func writeOperations(w *errWriter, s model.Snapshot, opt TableOptions) {
	w.printf("\nOPERATIONS\n")
	ops := flaggedFirst(s.Operations)
	if len(ops) == 0 {
		w.printf("  none\n")
		return
	}
	hidden := 0
	if opt.MaxOperations > 0 && len(ops) > opt.MaxOperations {
		hidden = len(ops) - opt.MaxOperations
		ops = ops[:opt.MaxOperations]
	}
	n := idLen(s.Operations, opt)
	head := []string{"SEV", "FLAGS", "STATEMENT", "STATE", "USER", "WAREHOUSE", "AGE", "IDLE", "REAPER", "CLOSE", "RETRIES", "SQL"}
	rows := make([][]string, 0, len(ops))
	sevs := make([]model.Severity, 0, len(ops))
	for _, o := range ops {
		sev := o.MaxSeverity()
		sevs = append(sevs, sev)
		close := string(o.Close.State)
		if close == "" {
			close = string(model.CloseNA)
		}
		rows = append(rows, []string{
			sevLabel(sev),
			flagKinds(o.Flags),
			stmtID(o.StatementID, n, opt),
			string(o.State),
			clean(textfmt.OrDash(o.User), opt.ASCII),
			clean(textfmt.OrDash(o.WarehouseID), opt.ASCII),
			textfmt.DurationOr(o.Age(s.GeneratedAt), "?"),
			textfmt.DurationOr(o.InactiveFor, "?"),
			textfmt.DurationOr(o.ReapedIn, "-"),
			close,
			fmt.Sprint(o.Poll.Retries),
			clean(o.SQL, opt.ASCII),
		})
	}
	// Left out first when the width is short: RETRIES, REAPER, CLOSE,
	// AGE, WAREHOUSE, IDLE, STATE, USER. The table leads with severity
	// and flags, which stay.
	writeGrid(w, head, rows, opt, []int{10, 8, 9, 6, 5, 7, 3, 4}, func(row int, cell string) string { return colourSev(cell, sevs[row], opt) })
	if hidden > 0 {
		w.printf("  %s %d more operations not shown\n", cut("……", 1, opt.ASCII), hidden)
	}
	var details []string
	for _, o := range ops {
		for _, f := range o.Flags {
			details = append(details, fmt.Sprintf("  %s  %s %s: %s", stmtID(o.StatementID, n, opt), f.Kind, f.Severity, clean(f.Detail, opt.ASCII)))
		}
		if o.LastError != nil && len(o.Flags) > 0 {
			details = append(details, fmt.Sprintf("  %s  last error: %s", stmtID(o.StatementID, n, opt), clean(o.LastError.String(), opt.ASCII)))
		}
	}
	if len(details) > 0 {
		w.printf("\nFLAG DETAILS\n%s\n", strings.Join(details, "\n"))
	}
}

func writeEndpoints(w *errWriter, s model.Snapshot, opt TableOptions) {
	w.printf("\nENDPOINTS\n")
	if len(s.Endpoints) == 0 {
		w.printf("  none\n")
		return
	}
	head := []string{"SEV", "FLAGS", "ENDPOINT", "TYPE", "STATE", "ROWS", "LIMIT", "SOURCE", "USAGE", "WRITES/MIN", "FULL IN", "THROUGHPUT", "INDEXES"}
	rows := make([][]string, 0, len(s.Endpoints))
	sevs := make([]model.Severity, 0, len(s.Endpoints))
	for _, e := range s.Endpoints {
		sev := e.MaxSeverity()
		sevs = append(sevs, sev)
		limit, usage, thr := "?", "?", "-"
		if e.RowLimit > 0 {
			limit = textfmt.Count(e.RowLimit)
			usage = fmt.Sprintf("%.1f%%", e.Usage*100)
		}
		if e.Throughput != nil {
			thr = fmt.Sprintf("%.0f%%", *e.Throughput)
		}
		rows = append(rows, []string{
			sevLabel(sev),
			flagKinds(e.Flags),
			clean(e.Name, opt.ASCII),
			clean(textfmt.OrDash(e.Type), opt.ASCII),
			clean(textfmt.OrDash(e.State), opt.ASCII),
			textfmt.Count(e.Rows),
			limit,
			textfmt.OrDash(string(e.RowLimitSource)),
			usage,
			fmt.Sprintf("%.0f", e.WriteRowsPerMin),
			textfmt.DurationOr(e.ETAFull, "-"),
			thr,
			fmt.Sprint(e.IndexCount()),
		})
	}
	// SOURCE, THROUGHPUT, WRITES/MIN, TYPE, LIMIT, STATE, FLAGS go first.
	writeGrid(w, head, rows, opt, []int{7, 11, 9, 3, 6, 4, 1}, func(row int, cell string) string { return colourSev(cell, sevs[row], opt) })
	var details []string
	for _, e := range s.Endpoints {
		if e.RowLimitWhy != "" {
			details = append(details, fmt.Sprintf("  %s  %s", clean(e.Name, opt.ASCII), clean(model.LimitLine(e.RowLimitWhy), opt.ASCII)))
		}
		for _, f := range e.Flags {
			details = append(details, fmt.Sprintf("  %s  %s %s: %s", clean(e.Name, opt.ASCII), f.Kind, f.Severity, clean(f.Detail, opt.ASCII)))
		}
		if e.LastError != nil && !hasExhaustedDetail(e) {
			details = append(details, fmt.Sprintf("  %s  last error: %s", clean(e.Name, opt.ASCII), clean(e.LastError.String(), opt.ASCII)))
		}
	}
	if len(details) > 0 {
		w.printf("\nENDPOINT DETAILS\n%s\n", strings.Join(details, "\n"))
	}
}

// hasExhaustedDetail: the EXHAUSTED flag detail already quotes LastError.
func hasExhaustedDetail(e model.EndpointView) bool {
	return e.Exhausted && e.HasFlag(model.FlagExhausted)
}

func writeErrors(w *errWriter, s model.Snapshot, opt TableOptions) {
	if len(s.Errors) == 0 {
		return
	}
	w.printf("\nERRORS (observing the workspace)\n")
	for _, e := range s.Errors {
		w.printf("  %s\n", clean(e.String(), opt.ASCII))
	}
}

// writeGrid aligns cells into columns; the last column (SQL, or the last
// figure) takes what remains of opt.Width. colour decorates the first
// column after padding, so escape codes never disturb alignment.
func writeGrid(w *errWriter, head []string, rows [][]string, opt TableOptions, dropOrder []int, colour func(row int, cell string) string) {
	widths := make([]int, len(head))
	for i, h := range head {
		widths[i] = width(h)
	}
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			widths[i] = max(widths[i], width(c))
		}
	}
	keep := make([]bool, len(head))
	for i := range keep {
		keep[i] = true
	}
	used := func() int {
		n := 0
		for i, wd := range widths[:len(widths)-1] {
			if keep[i] {
				n += wd + 2
			}
		}
		return n
	}
	const lastMin = 20 // the last column (SQL, indexes) keeps at least this much
	var left []string
	for _, d := range dropOrder {
		if opt.Wide || used()+lastMin <= opt.Width {
			break
		}
		keep[d] = false
		left = append(left, head[d])
	}
	last := max(opt.Width-used(), 8)
	line := func(cells []string, row int) string {
		var b strings.Builder
		for i, c := range cells {
			if i == len(cells)-1 {
				if opt.Wide {
					b.WriteString(c)
				} else {
					b.WriteString(cut(c, last, opt.ASCII))
				}
				break
			}
			if !keep[i] {
				continue
			}
			cell := pad(c, widths[i])
			if i == 0 && row >= 0 {
				cell = colour(row, c) + strings.Repeat(" ", widths[i]-width(c))
			}
			b.WriteString(cell)
			b.WriteString("  ")
		}
		return strings.TrimRight(b.String(), " ")
	}
	w.printf("%s\n", line(head, -1))
	for i, r := range rows {
		w.printf("%s\n", line(r, i))
	}
	if len(left) > 0 {
		w.printf("  (--wide shows: %s)\n", strings.ToLower(strings.Join(left, ",")))
	}
}
