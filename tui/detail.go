package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/textfmt"
)

// detailHistory is how many of the operation's own events the detail
// lists as its poll and close history.
const detailHistory = 50

// detailModel shows one operation whole: identity, flags with details, the
// full SQL wrapped, the error chain with request ids, and its poll and
// close history. It scrolls with j/k; the operation is the Operations
// table's selection.
type detailModel struct {
	ctx   *programContext
	ops   *opsModel
	width int
	pager
}

func (m *detailModel) SetSize(w, h int) { m.width, m.height = w, h }

func (m *detailModel) ShortHelp() []key.Binding {
	k := &m.ctx.keys
	return enabledKeys(k.Back, k.Down, k.Cancel, k.Close, k.CopyID, k.CopySQL)
}

func (m *detailModel) FullHelp() [][]key.Binding { return pagerHelp(&m.ctx.keys) }

func (m *detailModel) Update(msg tea.Msg) tea.Cmd {
	m.update(msg, &m.ctx.keys, len(m.build()))
	return nil
}

// View shows the window at the scroll position; the content may have
// shrunk since, so the position is clamped here without being stored.
func (m *detailModel) View() string {
	l := m.build()
	return lines(l[m.start(len(l)):])
}

func (m *detailModel) build() []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	op := m.ops.selected()
	if op == nil {
		// Collapsed, filtered out or gone from the table: the snapshot
		// may still have it, and its detail is what the operator opened.
		op = m.ops.find(m.ops.cursorID)
	}
	if op == nil {
		return []string{"", st.Warn.Render(fmt.Sprintf("  operation %s is gone (closed or reaped)", shortID(m.ops.cursorID, g.Ellipsis)))}
	}
	w := m.width - 4
	now := m.ctx.snap.GeneratedAt
	var l []string
	add := func(s ...string) { l = append(l, s...) }
	field := func(k, v string) { add("  " + st.Dim.Render(fit(k, 18, "")) + v) }
	section := func(t string) { add("", st.Bold.Render("  "+t)) }

	add(st.Title.Render("  Operation "+op.StatementID) + st.Dim.Render("   (esc back, j/k scroll)"))
	field("warehouse", op.WarehouseID)
	field("user", textfmt.OrDash(op.User))
	field("client", textfmt.OrDash(op.ClientApplication))
	state := string(op.State)
	if op.Gone {
		state += " (gone from the server)"
	}
	field("state", state)
	// Where the state came from, and why there (a stopped warehouse is
	// never asked over Thrift: that would start it).
	if op.StatusSource != "" {
		src := op.StatusSource
		if op.StatusNote != "" {
			src += ": " + op.StatusNote
		}
		add(wrapIndent("  "+st.Dim.Render(fit("status from", 18, ""))+src, w, "                    ")...)
	}
	field("started", timeAgo(op.StartedAt, now))
	field("completed", timeAgo(op.CompletedAt, now))
	// A "?" in the table says why here, and what would tell.
	long := func(k, v string) {
		for i, ln := range wrapWords(v, w-20) {
			if i == 0 {
				add("  " + st.Dim.Render(fit(k, 18, "")) + ln)
			} else {
				add("                    " + ln)
			}
		}
	}
	if idle := idleCell(m.ctx, op); idle == "?" {
		long("client idle", whyIdleUnknown)
	} else {
		field("client idle", idle)
	}
	switch {
	case op.Open != nil:
		field("open on server", fmt.Sprint(*op.Open))
	case opennessUnknown(op):
		long("open on server", whyOpenUnknown)
	default:
		field("open on server", "unknown")
	}
	adopted := "no"
	if op.Adopted {
		adopted = "yes: dbxtop closes it when it finishes"
	}
	field("adopted", adopted)

	section("Flags")
	if len(op.Flags) == 0 {
		add("  none")
	}
	for _, f := range op.Flags {
		add(wrapIndent(st.ForSeverity(f.Severity).Render(flagLabel(f, g))+": "+f.Detail, w, "    ")...)
	}

	section("SQL")
	for _, ln := range wrapWords(op.SQL, w) {
		add("  " + ln)
	}

	section("Errors")
	errs := 0
	if op.ServerError != "" {
		add(wrapIndent("server: "+op.ServerError, w, "    ")...)
		errs++
	}
	if op.LastError != nil {
		add(wrapIndent("last poll error: "+op.LastError.Line(), w, "    ")...)
		errs++
	}
	if op.Close.LastError != nil {
		add(wrapIndent("last close error: "+op.Close.LastError.Line(), w, "    ")...)
		errs++
	}
	if errs == 0 {
		add("  none")
	}

	section("Polls and closes")
	last := "never"
	if !op.LastPollOKAt.IsZero() {
		last = timeAgo(op.LastPollOKAt, now)
	}
	field("polls", fmt.Sprintf("%d ok, %d failed, %s; last ok %s", op.Poll.OK, op.Poll.Failed,
		plural(op.Poll.Retries, "retry", "retries"), last))
	cl := fmt.Sprintf("%s, %s", textfmt.OrDash(string(op.Close.State)), plural(op.Close.Attempts, "attempt", "attempts"))
	if !op.Close.NextTry.IsZero() {
		cl += "; next try in " + textfmt.Duration(max(op.Close.NextTry.Sub(now), 0))
	}
	if b, ok := m.ctx.busy[op.StatementID]; ok {
		cl += "; " + b
	}
	field("close", cl)
	if p := op.Proxy; p != nil {
		// What `dbxtop proxy` saw on the wire (docs/proxy.md).
		section("Proxy's account")
		rpc := "never"
		if !p.LastClientRPC.IsZero() {
			rpc = timeAgo(p.LastClientRPC, now)
		}
		field("last client call", rpc)
		pc := fmt.Sprintf("%s; client %s, proxy %d", textfmt.OrDash(p.CloseOutcome), plural(p.ClientCloseAttempts, "attempt", "attempts"), p.ProxyCloseAttempts)
		if !p.NextTry.IsZero() {
			pc += "; proxy retries in " + textfmt.Duration(max(p.NextTry.Sub(now), 0))
		}
		field("close", pc)
		if p.ClientCloseError != nil {
			add(wrapIndent("client's close error: "+p.ClientCloseError.Line(), w, "    ")...)
		}
		field("heals", fmt.Sprint(p.Heals))
		for _, a := range p.Actions {
			add(wrapIndent(a, w, "    ")...)
		}
	}
	hist := m.ctx.ring.newest(detailHistory, op.StatementID)
	if len(hist) > 0 {
		section("History (newest first)")
	}
	for _, e := range hist {
		line := fmt.Sprintf("%s  %-12s %s", e.At.UTC().Format("15:04:05"), e.Kind, eventText(e))
		if id := eventRequestID(e); id != "" {
			line += "  request_id " + id
		}
		add(wrapIndent(line, w, "    ")...)
	}
	return l
}

// wrapIndent wraps s to w cells: first line indented by two spaces, the
// rest by indent.
func wrapIndent(s string, w int, indent string) []string {
	lines := wrapWords(s, w-len(indent)+2)
	for i := range lines {
		if i == 0 {
			lines[i] = "  " + lines[i]
		} else {
			lines[i] = indent + lines[i]
		}
	}
	return lines
}

// timeAgo is "2026-11-29 20:41:07Z (5m12s ago)", or "-" when unknown.
func timeAgo(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z") + " (" + textfmt.Age(now, t) + " ago)"
}
