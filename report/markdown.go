package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// MaxEvents bounds the "Recent events" section of the incident report.
const MaxEvents = 100

// Markdown writes an incident report for a ticket or a postmortem: what was
// observed, the flagged operations with their details and SQL, every
// endpoint, the recent engine events and the errors, each with the request
// id support will ask for. Events are listed oldest first; only the last
// MaxEvents are kept.
func Markdown(w io.Writer, s model.Snapshot, events []model.Event) error {
	ew := &errWriter{w: w}
	mdSummary(ew, s)
	mdFlagged(ew, s.Operations)
	mdEndpoints(ew, s.Endpoints)
	mdEvents(ew, events)
	ew.printf("\n## Errors observing the workspace\n\n")
	if len(s.Errors) == 0 {
		ew.printf("None.\n")
	} else {
		for _, e := range s.Errors {
			ew.printf("- %s\n", mdInline(e.String()))
		}
	}
	return ew.err
}

func mdSummary(ew *errWriter, s model.Snapshot) {
	sum := s.Summary()
	whs := "all visible"
	if len(s.Workspace.Warehouses) > 0 {
		whs = strings.Join(s.Workspace.Warehouses, ", ")
	}
	ew.printf("# dbxtop incident report\n\n")
	ew.printf("- Generated: %s\n", s.GeneratedAt.UTC().Format(time.RFC3339))
	ew.printf("- Workspace: %s\n", mdInline(s.Workspace.Host))
	ew.printf("- Warehouses: %s\n", mdInline(whs))
	ew.printf("- Operations: %d (running %d, flagged %d)\n", sum.Operations, sum.Running, sum.Flagged)
	ew.printf("- Flags: %d critical, %d warning\n", sum.Critical, sum.Warnings)
	ew.printf("- Endpoints: %d (exhausted %d)\n", sum.Endpoints, sum.EndpointsExhausted)
	ew.printf("- Observation errors: %d\n", len(s.Errors))
}

// mdFlagged writes a table of the flagged operations, then a section per
// operation with its flags, errors and SQL.
func mdFlagged(ew *errWriter, ops []*model.OperationView) {
	ew.printf("\n## Flagged operations\n\n")
	var flagged []*model.OperationView
	for _, o := range ops {
		if len(o.Flags) > 0 {
			flagged = append(flagged, o)
		}
	}
	if len(flagged) == 0 {
		ew.printf("None.\n")
		return
	}
	ew.printf("| Severity | Flags | Statement | State | User | Warehouse | Client | Idle | Reaper | Close | Retries |\n")
	ew.printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, o := range flagged {
		ew.printf("| %s | %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			o.MaxSeverity(), flagKinds(o.Flags), mdCode(o.StatementID), o.State, mdCell(o.User), mdCell(o.WarehouseID),
			mdCell(o.ClientApplication), textfmt.DurationOr(o.InactiveFor, "?"), textfmt.DurationOr(o.ReapedIn, "-"),
			closeLabel(o.Close), o.Poll.Retries)
	}
	for _, o := range flagged {
		mdOperation(ew, o)
	}
}

func mdOperation(ew *errWriter, o *model.OperationView) {
	ew.printf("\n### `%s`\n\n", mdCode(o.StatementID))
	for _, f := range o.Flags {
		ew.printf("- **%s** (%s): %s\n", f.Kind, f.Severity, mdInline(f.Detail))
	}
	if o.ServerError != "" {
		ew.printf("- Server error: %s\n", mdInline(o.ServerError))
	}
	if o.LastError != nil {
		ew.printf("- Last poll error: %s\n", mdInline(o.LastError.String()))
	}
	if o.Close.LastError != nil && !o.HasFlag(model.FlagCloseFailed) {
		ew.printf("- Last close error: %s (attempts %d)\n", mdInline(o.Close.LastError.String()), o.Close.Attempts)
	}
	if o.SQL != "" {
		sql := textfmt.Block(o.SQL)
		fence := mdFence(sql)
		ew.printf("\n%ssql\n%s\n%s\n", fence, sql, fence)
	}
}

// mdEndpoints writes a table of every endpoint, then a section per
// endpoint with flags or an error.
func mdEndpoints(ew *errWriter, eps []model.EndpointView) {
	ew.printf("\n## Endpoints\n\n")
	if len(eps) == 0 {
		ew.printf("None.\n")
		return
	}
	ew.printf("| Severity | Flags | Endpoint | Type | State | Rows | Limit | Usage | Full in |\n")
	ew.printf("|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range eps {
		limit, usage := "?", "?"
		if e.RowLimit > 0 {
			limit = textfmt.Count(e.RowLimit)
			usage = fmt.Sprintf("%.1f%%", e.Usage*100)
		}
		sev := string(e.MaxSeverity())
		if sev == "" {
			sev = "ok"
		}
		ew.printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sev, flagKinds(e.Flags), mdCell(e.Name),
			mdCell(e.Type), mdCell(e.State), textfmt.Count(e.Rows), limit, usage, textfmt.DurationOr(e.ETAFull, "-"))
	}
	for _, e := range eps {
		if len(e.Flags) == 0 && e.LastError == nil {
			continue
		}
		ew.printf("\n### %s\n\n", mdInline(e.Name))
		for _, f := range e.Flags {
			ew.printf("- **%s** (%s): %s\n", f.Kind, f.Severity, mdInline(f.Detail))
		}
		if e.LastError != nil && !hasExhaustedDetail(e) {
			ew.printf("- Last error: %s\n", mdInline(e.LastError.String()))
		}
	}
}

// mdEvents writes the last MaxEvents events, oldest first.
func mdEvents(ew *errWriter, events []model.Event) {
	ew.printf("\n## Recent events\n\n")
	if len(events) > MaxEvents {
		events = events[len(events)-MaxEvents:]
	}
	if len(events) == 0 {
		ew.printf("None recorded.\n")
		return
	}
	ew.printf("| Time | Event | Operation / endpoint | Call | Message | Request id |\n")
	ew.printf("|---|---|---|---|---|---|\n")
	for _, ev := range events {
		subject := ev.StatementID
		if subject == "" {
			subject = ev.Endpoint
		}
		ew.printf("| %s | %s | %s | %s | %s | %s |\n", ev.At.UTC().Format(time.RFC3339), ev.Kind, mdCell(subject),
			mdCell(ev.Call), mdCell(ev.Text()), mdCell(ev.AnyRequestID()))
	}
}

func closeLabel(c model.CloseInfo) string {
	if c.State == "" {
		return string(model.CloseNA)
	}
	if c.Attempts > 0 {
		return fmt.Sprintf("%s (%d)", c.State, c.Attempts)
	}
	return string(c.State)
}

// mdInline makes remote text one safe Markdown line: no newlines or
// control characters, HTML and link syntax neutralised.
func mdInline(s string) string {
	s = clean(s, false)
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`, "*", `\*`, "_", `\_`, "`", "'")
	return r.Replace(s)
}

// mdCell is mdInline plus escaped pipes, for table cells; "-" when empty.
func mdCell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(mdInline(s), "|", `\|`)
}

// mdFence is a code fence longer than any run of backticks in s, so the
// text inside cannot close it and forge report content (CommonMark: a
// fence closes only with at least as many backticks as opened it).
func mdFence(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// mdCode is text placed between backticks.
func mdCode(s string) string {
	return strings.ReplaceAll(clean(s, false), "`", "'")
}
