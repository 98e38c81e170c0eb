package tui

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
)

// writeIncidentMarkdown renders the incident report: flagged operations,
// endpoints and recent events. Private and minimal until report.Markdown
// (REST engineer) lands; then export should call that.
func writeIncidentMarkdown(w io.Writer, now time.Time, s model.Snapshot, events []poller.Event) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("# dbxtop incident report\n\n")
	p("- generated: %s\n", now.UTC().Format(time.RFC3339))
	p("- snapshot: %s\n", s.GeneratedAt.UTC().Format(time.RFC3339))
	p("- workspace: %s\n", mdCell(s.Workspace.Host))
	p("- warehouses: %s\n", mdCell(strings.Join(s.Workspace.Warehouses, ", ")))
	flagged := 0
	for i := range s.Operations {
		if len(s.Operations[i].Flags) > 0 {
			flagged++
		}
	}
	p("- operations: %d (%d flagged)\n- endpoints: %d\n\n", len(s.Operations), flagged, len(s.Endpoints))

	p("## Flagged operations\n\n")
	if flagged == 0 {
		p("None.\n\n")
	} else {
		p("| flags | statement_id | state | user | warehouse | inactive | reaper in | close | last error | SQL |\n")
		p("|---|---|---|---|---|---|---|---|---|---|\n")
		for i := range s.Operations {
			op := &s.Operations[i]
			if len(op.Flags) == 0 {
				continue
			}
			var fl []string
			for _, f := range op.Flags {
				fl = append(fl, fmt.Sprintf("%s %s: %s", strings.ToUpper(string(f.Severity)), f.Kind, f.Detail))
			}
			p("| %s | `%s` | %s | %s | %s | %s | %s | %s | %s | `%s` |\n",
				mdCell(strings.Join(fl, "; ")), op.StatementID, op.State, mdCell(op.User), mdCell(op.WarehouseID),
				optDur(op.InactiveFor), optDur(op.ReapedIn), closeCell(op),
				mdCell(errorLine(op.LastError)), mdCell(truncRunes(oneLine(op.SQL), 200)))
		}
		p("\n")
	}

	p("## Endpoints\n\n")
	if len(s.Endpoints) == 0 {
		p("None observed.\n\n")
	} else {
		p("| endpoint | type | state | rows | limit | usage | time to full | flags | last error |\n")
		p("|---|---|---|---|---|---|---|---|---|\n")
		for i := range s.Endpoints {
			ep := &s.Endpoints[i]
			var fl []string
			for _, f := range ep.Flags {
				fl = append(fl, fmt.Sprintf("%s %s", strings.ToUpper(string(f.Severity)), f.Kind))
			}
			p("| %s | %s | %s | %d | %d | %.1f%% | %s | %s | %s |\n", mdCell(ep.Name), ep.Type, ep.State,
				ep.Rows, ep.RowLimit, ep.Usage*100, optDur(ep.ETAFull), strings.Join(fl, ", "), mdCell(errorLine(ep.LastError)))
		}
		p("\n")
	}

	if len(s.Errors) > 0 {
		p("## Problems observing the workspace\n\n")
		for i := range s.Errors {
			p("- %s\n", mdCell(errorLine(&s.Errors[i])))
		}
		p("\n")
	}

	p("## Recent events (newest first)\n\n")
	if len(events) == 0 {
		p("None.\n")
		return
	}
	p("| time | kind | operation | message | request_id |\n|---|---|---|---|---|\n")
	for _, e := range events {
		p("| %s | %s | %s | %s | %s |\n", e.At.UTC().Format(time.RFC3339), e.Kind, e.StatementID,
			mdCell(eventText(e)), eventRequestID(e))
	}
}

func closeCell(op *model.OperationView) string {
	if op.Close.State == "" || op.Close.State == model.CloseNA {
		return "n/a"
	}
	return fmt.Sprintf("%s (%d attempts)", op.Close.State, op.Close.Attempts)
}

func optDur(d *time.Duration) string {
	if d == nil {
		return "?"
	}
	return fmtDur(*d)
}

// mdCell keeps a value inside one table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

func truncRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}
