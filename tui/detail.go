package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/dbxtop/dbxtop/model"
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
	d := &detailLines{st: st, w: m.width - 4}
	now := m.ctx.snap.GeneratedAt
	m.identity(d, op, now)
	m.flags(d, op)
	d.section("SQL")
	for _, ln := range wrapWords(op.SQL, d.w) {
		d.add("  " + ln)
	}
	m.errorChain(d, op)
	m.pollsAndCloses(d, op, now)
	if p := op.Proxy; p != nil {
		proxyAccount(d, p, now)
	}
	m.history(d, op)
	return d.l
}

// detailLines gathers the detail's lines: labelled fields under section
// titles, wrapped to w.
type detailLines struct {
	st *Styles
	w  int
	l  []string
}

func (d *detailLines) add(s ...string) { d.l = append(d.l, s...) }

func (d *detailLines) field(k, v string) { d.add("  " + d.st.Dim.Render(fit(k, 18, "")) + v) }

// long is a field whose value wraps under itself.
func (d *detailLines) long(k, v string) {
	for i, ln := range wrapWords(v, d.w-20) {
		if i == 0 {
			d.add("  " + d.st.Dim.Render(fit(k, 18, "")) + ln)
		} else {
			d.add("                    " + ln)
		}
	}
}

func (d *detailLines) section(t string) { d.add("", d.st.Bold.Render("  "+t)) }

// wrapped adds s wrapped to the page, its later lines indented.
func (d *detailLines) wrapped(s string) { d.add(wrapIndent(s, d.w, "    ")...) }

// identity is the title and who, where, what state and since when.
func (m *detailModel) identity(d *detailLines, op *model.OperationView, now time.Time) {
	st := d.st
	d.add(st.Title.Render("  Operation "+op.StatementID) + st.Dim.Render("   (esc back, j/k scroll)"))
	d.field("warehouse", op.WarehouseID)
	d.field("user", textfmt.OrDash(op.User))
	d.field("client", textfmt.OrDash(op.ClientApplication))
	state := string(op.State)
	if op.Gone {
		state += " (gone from the server)"
	}
	d.field("state", state)
	// Where the state came from, and why there (a stopped warehouse is
	// never asked over Thrift: that would start it).
	if op.StatusSource != "" {
		src := op.StatusSource
		if op.StatusNote != "" {
			src += ": " + op.StatusNote
		}
		d.add(wrapIndent("  "+st.Dim.Render(fit("status from", 18, ""))+src, d.w, "                    ")...)
	}
	d.field("started", timeAgo(op.StartedAt, now))
	d.field("completed", timeAgo(op.CompletedAt, now))
	// A "?" in the table says why here, and what would tell.
	if idle := idleCell(m.ctx, op); idle == "?" {
		d.long("client idle", whyIdleUnknown)
	} else {
		d.field("client idle", idle)
	}
	switch {
	case op.Open != nil:
		d.field("open on server", fmt.Sprint(*op.Open))
	case opennessUnknown(op) && op.Proxy != nil:
		d.long("open on server", whyOpenUnknownProxied)
	case opennessUnknown(op):
		d.long("open on server", whyOpenUnknown)
	default:
		d.field("open on server", "unknown")
	}
	adopted := "no"
	if op.Adopted {
		adopted = "yes: dbxtop closes it when it finishes"
	}
	d.field("adopted", adopted)
}

func (m *detailModel) flags(d *detailLines, op *model.OperationView) {
	d.section("Flags")
	if len(op.Flags) == 0 {
		d.add("  none")
	}
	for _, f := range op.Flags {
		d.wrapped(d.st.ForSeverity(f.Severity).Render(flagLabel(f, m.ctx.glyphs)) + ": " + f.Detail)
	}
}

func (m *detailModel) errorChain(d *detailLines, op *model.OperationView) {
	d.section("Errors")
	errs := 0
	if op.ServerError != "" {
		d.wrapped("server: " + op.ServerError)
		errs++
	}
	if op.LastError != nil {
		d.wrapped("last poll error: " + op.LastError.Line())
		errs++
	}
	if op.Close.LastError != nil {
		d.wrapped("last close error: " + op.Close.LastError.Line())
		errs++
	}
	if errs == 0 {
		d.add("  none")
	}
}

func (m *detailModel) pollsAndCloses(d *detailLines, op *model.OperationView, now time.Time) {
	d.section("Polls and closes")
	last := "never"
	if !op.LastPollOKAt.IsZero() {
		last = timeAgo(op.LastPollOKAt, now)
	}
	d.field("polls", fmt.Sprintf("%d ok, %d failed, %s; last ok %s", op.Poll.OK, op.Poll.Failed,
		plural(op.Poll.Retries, "retry", "retries"), last))
	cl := fmt.Sprintf("%s, %s", textfmt.OrDash(string(op.Close.State)), plural(op.Close.Attempts, "attempt", "attempts"))
	if !op.Close.NextTry.IsZero() {
		cl += "; next try in " + textfmt.Duration(max(op.Close.NextTry.Sub(now), 0))
	}
	if b, ok := m.ctx.busy[op.StatementID]; ok {
		cl += "; " + b
	}
	d.field("close", cl)
}

// proxyAccount is what `dbxtop proxy` saw on the wire (docs/proxy.md).
func proxyAccount(d *detailLines, p *model.ProxyAccount, now time.Time) {
	d.section("Proxy's account")
	if len(p.SeenBy) > 0 {
		d.field("seen by", strings.Join(p.SeenBy, ", "))
	}
	if p.Unknown != "" {
		// A proxy that saw it does not answer: what it saw since is "?".
		d.wrapped("? " + p.Unknown)
	}
	rpc := "never"
	if !p.LastClientRPC.IsZero() {
		rpc = timeAgo(p.LastClientRPC, now)
	}
	d.field("last client call", rpc)
	pc := fmt.Sprintf("%s; client %s, proxy %d", textfmt.OrDash(p.CloseOutcome), plural(p.ClientCloseAttempts, "attempt", "attempts"), p.ProxyCloseAttempts)
	if !p.NextTry.IsZero() {
		pc += "; proxy retries in " + textfmt.Duration(max(p.NextTry.Sub(now), 0))
	}
	d.field("close", pc)
	if p.ClientCloseError != nil {
		d.wrapped("client's close error: " + p.ClientCloseError.Line())
	}
	d.field("heals", fmt.Sprint(p.Heals))
	for _, a := range p.Actions {
		d.wrapped(a)
	}
}

// history lists the operation's own events, newest first.
func (m *detailModel) history(d *detailLines, op *model.OperationView) {
	hist := m.ctx.ring.newest(detailHistory, op.StatementID)
	if len(hist) > 0 {
		d.section("History (newest first)")
	}
	for _, e := range hist {
		line := fmt.Sprintf("%s  %-12s %s", e.At.UTC().Format("15:04:05"), e.Kind, eventText(e))
		if id := eventRequestID(e); id != "" {
			line += "  request_id " + id
		}
		d.wrapped(line)
	}
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
