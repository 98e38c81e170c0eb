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

// blindBanner is the body when dbxtop cannot observe the workspace at all
// (a workspace-level call is failing and nothing is listed): the cause in
// plain words and what to check, instead of "no operations". nil when
// dbxtop can see.
func blindBanner(ctx *programContext, width int) []string {
	var errs []model.ErrorInfo
	for _, e := range ctx.snap.Errors {
		if e.Kind != model.KindTruncated { // a cut listing is not blindness
			errs = append(errs, e)
		}
	}
	st := &ctx.styles
	if len(errs) == 0 {
		if h := ctx.health; h.LastDiscovery.IsZero() && (h.Retries > 0 || h.DiscoveryFailures > 0) {
			// Not "no operations": nothing has been listed yet.
			out := []string{"", st.Warn.Render("  no answer from the workspace yet: its first listing is being retried " + waited(ctx)),
				st.Dim.Render(fmt.Sprintf("    (%d retries so far; the cause shows here once the listing gives up)", h.Retries))}
			if r := h.LastRetry; r != nil {
				for _, l := range wrapWords("the last attempt: "+r.Line(), width-6) {
					out = append(out, st.Dim.Render("    "+l))
				}
			}
			return out
		}
		switch h := ctx.health; {
		case h.Waiting != "":
			out := []string{""}
			for i, l := range wrapWords(h.Waiting+": nothing is known yet "+waited(ctx), width-4) {
				ind := "  "
				if i > 0 {
					ind = "    "
				}
				out = append(out, st.Warn.Render(ind+l))
			}
			return out
		case h.LastDiscovery.IsZero() && !h.DiscoveryUp:
			return []string{"", st.Warn.Render("  waiting for the first listing of operations " + waited(ctx))}
		}
		return nil
	}
	e := &errs[0]
	cause, check := explain(e)
	what := "the workspace"
	if strings.HasPrefix(e.Call, "Proxy") {
		what = "through the proxy"
	}
	out := []string{""}
	for i, l := range wrapWords("dbxtop cannot observe "+what+": "+cause, width-4) {
		ind := "  "
		if i > 0 {
			ind = "    "
		}
		out = append(out, st.Crit.Render(ind+l))
	}
	for _, l := range wrapWords(check, width-6) {
		out = append(out, "    "+l)
	}
	out = append(out, "")
	for _, l := range wrapWords("the call that failed: "+e.Line(), width-6) {
		out = append(out, st.Dim.Render("    "+l))
	}
	if len(errs) > 1 {
		out = append(out, st.Dim.Render(fmt.Sprintf("    (%d more failing calls: see the Events view)", len(errs)-1)))
	}
	// Only a passing failure clears by itself; a refused token or a
	// missing permission stays until someone fixes it.
	last := "dbxtop keeps retrying; this clears once the call succeeds."
	switch {
	case e.Call == "Authenticate":
		last = "dbxtop does not ask again: quit (q), fix the credentials and start it again."
	case e.Kind == model.KindPermanent:
		last = "dbxtop asks again every refresh, but this will not clear until the cause above is fixed."
	}
	out = append(out, "")
	for _, l := range wrapWords(last, width-6) {
		out = append(out, st.Dim.Render("    "+l))
	}
	return out
}

// noWarehouses is the body when the workspace answered but its warehouse
// listing holds nothing to watch: no SQL warehouse is visible to this
// identity, or the --warehouse selection names none of those that are.
// Said in plain words with what to check, instead of "no operations".
// nil when the listing is unknown or has warehouses to watch.
func noWarehouses(ctx *programContext, width int) []string {
	ws := ctx.workspace()
	l := ws.Listing
	if l == nil || l.Matched > 0 {
		return nil
	}
	st := &ctx.styles
	where := "in this workspace"
	if len(ctx.snap.Workspaces) > 1 {
		where = "in the watched workspaces"
	}
	var head, check string
	if l.Visible == 0 {
		head = "no SQL warehouses " + where
		check = "ListWarehouses answered with an empty list. Check the host (DATABRICKS_HOST, --host or the profile) names the workspace you mean, and that this token's user can see its warehouses (CAN_USE permission on at least one)."
	} else {
		head = fmt.Sprintf("--warehouse %s matches none of the %d SQL warehouses %s", strings.Join(ws.Warehouses, ","), l.Visible, where)
		check = "Check the warehouse ids (a warehouse's Connection details show its id; `databricks warehouses list` lists them). Without --warehouse, every warehouse is watched."
	}
	out := []string{""}
	for i, h := range wrapWords(head, width-4) {
		if i == 0 {
			out = append(out, st.Warn.Render("  "+h))
		} else {
			out = append(out, st.Warn.Render("    "+h))
		}
	}
	for _, line := range wrapWords(check, width-6) {
		out = append(out, "    "+line)
	}
	out = append(out, "")
	for _, line := range wrapWords("listed at "+l.At.UTC().Format("15:04:05")+"; dbxtop lists again every refresh, and this clears once there is a warehouse to watch.", width-6) {
		out = append(out, st.Dim.Render("    "+line))
	}
	return out
}

// explain turns a workspace error into its cause and what to check.
func explain(e *model.ErrorInfo) (cause, check string) {
	msg := strings.ToLower(e.Message + " " + e.ErrorCode)
	switch {
	case e.Call == "Authenticate": // cmd's start-up: the credential chain gave no credentials in time
		return "no credentials resolved", "Set DATABRICKS_TOKEN or --token, pick a --profile, or run `databricks auth login`; the line below says what was tried."
	case strings.HasPrefix(e.Call, "Proxy") && (e.HTTPStatus == 401 || e.HTTPStatus == 403):
		return fmt.Sprintf("%d: the proxy refused DBXTOP_PROXY_TOKEN", e.HTTPStatus), "Set DBXTOP_PROXY_TOKEN to the admin_token= the proxy (dbxtop proxy) printed on its first line; the workspace's token is not the proxy's."
	case strings.HasPrefix(e.Call, "Proxy") && strings.Contains(msg, "connection refused"):
		return "the proxy is not answering", "Check that dbxtop proxy runs and that --proxy names its admin= address."
	case e.HTTPStatus == 401:
		return "401: the token was refused", "Check DATABRICKS_TOKEN or the profile (--profile, ~/.databrickscfg): it may be expired, revoked or for another workspace."
	case e.HTTPStatus == 403:
		return "403: permission denied", "The identity behind the token may not list queries or warehouses here: check its workspace entitlements and warehouse permissions."
	case strings.Contains(msg, "no such host") || strings.Contains(msg, "server misbehaving"):
		return "unknown host", "Check DATABRICKS_HOST (or --host / the profile) for a typo, and DNS from this machine."
	case strings.Contains(msg, "connection refused"):
		return "connection refused", "Nothing listens at the host and port: check DATABRICKS_HOST, the port, and any proxy (HTTPS_PROXY)."
	case strings.Contains(msg, "x509") || strings.Contains(msg, "tls") || strings.Contains(msg, "certificate"):
		return "TLS failure", "The server's certificate was not accepted: check the host name, a TLS-intercepting proxy, and the system CA certificates."
	case strings.Contains(msg, "timeout") || strings.Contains(msg, "deadline"):
		return "no answer in time", "Check the network path to the workspace (VPN, firewall, proxy)."
	case e.HTTPStatus == 429 || e.Kind == model.KindThrottled:
		return "throttled by the workspace", "dbxtop backs off; other clients may be using the workspace's request limits."
	case e.HTTPStatus >= 500:
		return fmt.Sprintf("the workspace answered HTTP %d", e.HTTPStatus), "A server-side problem: it usually passes; quote the request id to Databricks support if it does not."
	}
	if e.Kind == model.KindPermanent {
		return "the call was refused", "Retrying will not help: see the call below and the Events view for what to change."
	}
	return string(e.Kind), "See the call below and the Events view."
}

// mouse: with --mouse, the wheel moves like j/k and a click selects an
// operation or endpoint row. Off by default so that text selection over
// ssh keeps working.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	if !m.ctx.opts.Mouse || m.confirm != nil {
		return nil
	}
	k := &m.ctx.keys
	press := func(b key.Binding) tea.Cmd {
		return m.current().Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(b.Keys()[len(b.Keys())-1])})
	}
	switch {
	case msg.Button == tea.MouseButtonWheelUp:
		return press(k.Up)
	case msg.Button == tea.MouseButtonWheelDown:
		return press(k.Down)
	case msg.Button == tea.MouseButtonLeft && msg.Action == tea.MouseActionPress:
		row := msg.Y - m.headerHeight() - 1 // minus the column header
		if m.view == viewOps && !m.detailOpen && row >= 0 {
			if i := m.ops.offset + row; i < len(m.ops.rows) && row < m.ops.tableRows() {
				m.ops.moveCursor(i - m.ops.cursorIdx)
			}
		}
	}
	return nil
}

// waited is how long the screen has waited for its first answer.
func waited(ctx *programContext) string {
	if ctx.started.IsZero() {
		return ""
	}
	return "(" + textfmt.Duration(max(ctx.opts.Now().Sub(ctx.started), 0).Truncate(time.Second)) + ")"
}
