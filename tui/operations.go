package tui

import (
	"fmt"
	"github.com/charmbracelet/x/ansi"
	"strconv"
	"strings"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// column is one Operations table column. Widths are the narrowest
// useful; drop is the order in which columns collapse on a narrow terminal
// (lower drops first, 0 never drops); grow is how much wider the column
// gets, in priority order, when the terminal has room (SQL takes the rest).
type column struct {
	id    colID
	title string
	width int
	drop  int
	sort  model.SortKey // "": the column does not sort
	grow  int
}

type colID int

const (
	colFlag colID = iota
	colID_
	colState
	colUser
	colWarehouse
	colAge
	colInactive
	colClose
	colRetries
	colSQL
	colWorkspace // only when several workspaces are watched
)

// columnNames are the config file's names of the columns (ui.columns).
var columnNames = map[string]colID{"flag": colFlag, "statement": colID_, "state": colState, "user": colUser,
	"warehouse": colWarehouse, "workspace": colWorkspace, "age": colAge, "idle": colInactive,
	"close": colClose, "retries": colRetries, "sql": colSQL}

// hiddenColumns are the columns a ui.columns list leaves out (nil: none).
func hiddenColumns(show []string) map[colID]bool {
	if len(show) == 0 {
		return nil
	}
	hide := map[colID]bool{}
	for _, id := range columnNames {
		hide[id] = true
	}
	for _, n := range show {
		delete(hide, columnNames[n])
	}
	return hide
}

// sqlMin is the narrowest SQL column worth showing; sqlComfort is what SQL
// keeps before USER and WAREHOUSE widen.
const (
	sqlMin     = 12
	sqlComfort = 40
)

var allColumns = []column{
	{colFlag, "FLAG", flagCellMax, 0, model.SortSeverity, 0},
	{colID_, "STATEMENT", 9, 0, model.SortStatementID, 0},
	{colState, "STATE", 8, 0, model.SortState, 0},
	{colUser, "USER", 11, 5, model.SortUser, 13},
	{colWarehouse, "WAREHOUSE", 10, 6, model.SortWarehouse, 10},
	{colWorkspace, "WORKSPACE", 10, 5, "", 6},
	{colAge, "AGE", 6, 4, model.SortAge, 0},
	{colInactive, "IDLE/REAPER", 14, 0, model.SortInactivity, 0},
	{colClose, "CLOSE", 13, 2, "", 0},
	{colRetries, "RETRY", 5, 3, model.SortRetries, 0},
	{colSQL, "SQL", 0, 1, "", 0},
}

// layout picks the columns that fit width: SQL goes first, then close,
// retries, age, user, warehouse (docs/operator-guide.md, "Small
// terminals"); FLAG, STATEMENT, STATE and IDLE/REAPER never drop. flagW
// is the widest flag cell in the table, so an unflagged table does not
// spend its width on blanks. With
// room to spare, USER and WAREHOUSE widen before SQL takes the rest.
func layout(width, flagW int) ([]column, int) { return layoutFor(width, flagW, false, nil, "") }

// layoutFor is layout with the WORKSPACE column when multi (several
// workspaces watched). Neither WORKSPACE (with several workspaces) nor
// the sorted column is dropped for width: which workspace a row belongs
// to, and what orders the table, stay on screen.
func layoutFor(width, flagW int, multi bool, hide map[colID]bool, sorted model.SortKey) ([]column, int) {
	dropped := 0
	for {
		need := 2 // cursor and space
		var cols []column
		for _, c := range allColumns {
			keep := c.id == colWorkspace && multi || c.sort != "" && c.sort == sorted
			if c.drop != 0 && c.drop <= dropped && !keep || c.id == colWorkspace && !multi || hide[c.id] {
				continue
			}
			if c.id == colFlag {
				c.width = flagW
			}
			cols = append(cols, c)
			if c.id == colSQL {
				need += sqlMin
			} else {
				need += c.width + 1
			}
		}
		if need <= width || dropped >= 6 {
			sqlW := 0
			if cols[len(cols)-1].id == colSQL {
				sqlW = width - need + sqlMin
				for i := range cols {
					if g := min(cols[i].grow, max(0, sqlW-sqlComfort)); g > 0 {
						cols[i].width += g
						sqlW -= g
					}
				}
			}
			return cols, sqlW
		}
		dropped++
	}
}

// View renders the column header and only the visible rows: its cost
// depends on the screen height, not on the number of operations.
func (m *opsModel) View() string { return lines(m.viewLines()) }

func (m *opsModel) viewLines() []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	cols, sqlW := layoutFor(m.width, m.flagW, len(m.ctx.snap.Workspaces) > 1, m.hidden, m.sort)
	n := m.tableRows()
	out := make([]string, 0, n+1)

	var hb strings.Builder
	hb.WriteString("  ")
	for _, c := range cols {
		t := c.title
		w := c.width
		if c.id == colSQL {
			w = sqlW
		}
		if c.sort == m.sort && c.sort != "" {
			a := arrow(g, m.desc)
			// The arrow always shows: a narrow title gives way to it.
			t = ansi.Truncate(t, max(0, w-ansi.StringWidth(a)), "") + a
		}
		hb.WriteString(fit(t, w, ""))
		hb.WriteByte(' ')
	}
	out = append(out, st.ColHead.Render(strings.TrimRight(hb.String(), " ")))

	if len(m.rows) == 0 {
		out = append(out, m.emptyLines()...)
		return out
	}
	// Every row in the window is drawn (ensureVisible keeps the cursor's
	// in it); the collapsed line only takes a line left over below the
	// last row, never a row's place.
	end := min(len(m.rows), m.offset+n)
	for i := m.offset; i < end; i++ {
		op := m.ctx.snap.Operations[m.rows[i]]
		out = append(out, m.opRow(op, cols, sqlW, i == m.cursorRow && op.StatementID == m.cursorID))
	}
	if m.tailLines() > 0 && end == len(m.rows) && end-m.offset < n {
		out = append(out, st.Dim.Render(fmt.Sprintf("  %s %d finished and closed (d shows them)", g.Collapsed, m.doneHidden)))
	}
	return out
}

// emptyLines says why the table is empty: a filter, only finished rows,
// or nothing observed (then whether dbxtop can see the workspace at all).
func (m *opsModel) emptyLines() []string {
	st := &m.ctx.styles
	switch {
	case m.filter.Text != "" || m.filter.FlaggedOnly:
		return []string{st.Dim.Render("  no operations match the filter (esc clears it, f toggles flagged only)")}
	case m.doneHidden > 0:
		return []string{st.Dim.Render(fmt.Sprintf("  no live or flagged operations; %d finished and closed (d shows them)", m.doneHidden))}
	}
	// A selection that matches no warehouse is also an error (the header's
	// last error), but its own body says what to check, not "retrying";
	// any other failing call is the cause to fix first.
	if b := blindBanner(m.ctx, m.width); b != nil && !onlySelectionError(m.ctx) {
		return b
	}
	if b := noWarehouses(m.ctx, m.width); b != nil {
		return b
	}
	return []string{st.Dim.Render("  no operations on the watched warehouses")}
}

func arrow(g Glyphs, desc bool) string {
	// ASCII has no arrows; v/^ after a space.
	switch {
	case g.Cursor == ">" && desc:
		return " v"
	case g.Cursor == ">":
		return " ^"
	case desc:
		return "▼"
	}
	return "▲"
}

// opRow renders one row. Colour only repeats what the symbols and words
// already say.
func (m *opsModel) opRow(op *model.OperationView, cols []column, sqlW int, sel bool) string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	var b strings.Builder
	if sel {
		b.WriteString(g.Cursor + " ")
	} else {
		b.WriteString("  ")
	}
	var flagText string
	for _, c := range cols {
		w := c.width
		var v string
		switch c.id {
		case colFlag:
			f, _ := worstFlag(op.Flags)
			v = fit(flagCell(op.Flags, g, w), w, g.Ellipsis)
			if !sel && f.Severity != "" {
				flagText = v
				v = "\x00" // placeholder, styled below without re-measuring
			}
		case colID_:
			v = fit(shortID(op.StatementID, g.Ellipsis), w, "")
		case colState:
			s := string(op.State)
			if op.Gone {
				s = "GONE"
			}
			v = fit(s, w, "")
		case colUser:
			v = fit(op.User, w, g.Ellipsis)
		case colWarehouse:
			v = fit(op.WarehouseID, w, g.Ellipsis)
		case colWorkspace:
			v = fit(op.Workspace, w, g.Ellipsis)
		case colAge:
			a := "?"
			if !op.StartedAt.IsZero() {
				a = textfmt.Duration(max(m.ctx.snap.GeneratedAt.Sub(op.StartedAt), 0))
			}
			v = fit(a, w, "")
		case colInactive:
			v = fit(idleCell(m.ctx, op), w, "")
		case colClose:
			v = fit(m.closeCell(op), w, g.Ellipsis)
		case colRetries:
			v = fit(strconv.Itoa(op.Poll.Retries), w, "")
		case colSQL:
			w = sqlW
			v = fit(oneLine(op.SQL), w, g.Ellipsis)
		}
		b.WriteString(v)
		b.WriteByte(' ')
	}
	row := strings.TrimRight(b.String(), " ")
	if sel {
		// The glyph marks the row; reverse video only repeats it.
		return st.Selected.Render(fit(row, m.width, ""))
	}
	if flagText != "" {
		f, _ := worstFlag(op.Flags)
		row = strings.Replace(row, "\x00", st.ForSeverity(f.Severity).Render(flagText), 1)
	} else if op.Done() {
		row = st.Dim.Render(row)
	}
	return row
}

// idleCell is "1m12s →5m58s": time since the owning client's last call and
// the countdown to the server reaper; "?" when the source cannot tell;
// "-" once the operation stopped running (no inactivity reaper applies).
//
// While dbxtop is blind on the operation (STALE), what it knows is only as
// old as its last successful poll: the cell says "as of 19:58:02" instead
// of counting on as if the client were still idle now.
func idleCell(ctx *programContext, op *model.OperationView) string {
	if op.State.Terminal() || op.Gone {
		return "-"
	}
	if op.InactiveFor == nil {
		return "?"
	}
	if op.HasFlag(model.FlagStale) && !op.LastPollOKAt.IsZero() {
		return "as of " + op.LastPollOKAt.UTC().Format("15:04:05")
	}
	if at := agedAt(ctx, op); !at.IsZero() {
		// Its source is down: the countdown stopped being true then.
		return "as of " + at.UTC().Format("15:04:05")
	}
	s := textfmt.Duration(*op.InactiveFor)
	if op.ReapedIn != nil {
		s += " " + ctx.glyphs.Reaper + textfmt.Duration(*op.ReapedIn)
	}
	return s
}

// closeCell shows a running action first, then dbxtop's close bookkeeping.
func (m *opsModel) closeCell(op *model.OperationView) string {
	if s, ok := m.ctx.busy[op.StatementID]; ok {
		return s
	}
	if r, ok := m.ctx.results[op.StatementID]; ok && m.ctx.opts.Now().Sub(r.at) < resultTTL {
		return r.text
	}
	switch op.Close.State {
	case model.ClosePending:
		return "pending"
	case model.CloseClosed:
		return "closed"
	case model.CloseFailed:
		return "failed x" + strconv.Itoa(op.Close.Attempts)
	}
	if op.Adopted {
		return "adopted"
	}
	if opennessUnknown(op) {
		return "?" // never "-", which reads as nothing to close (the detail says why)
	}
	return "-"
}

// opennessUnknown: the operation ended, and dbxtop does not know whether
// the server still holds it (query history tells no openness; a strict
// server refuses a handle rebuilt from the statement id).
func opennessUnknown(op *model.OperationView) bool {
	return op.State.Terminal() && op.State != model.StateClosed && !op.Gone && op.Open == nil
}

// Why the CLOSE and IDLE cells say "?", for the detail view.
const (
	whyOpenUnknown = "unknown: query history does not tell whether the server still holds an ended operation, " +
		"and a strict server refuses a handle rebuilt from its statement id; `dbxtop proxy` on the client's path would tell (--proxy)"
	// With the proxy's account on the row: the proxy was there and its
	// evidence does not tell (it learned the operation late, or its proof
	// aged out); the status line says which.
	whyOpenUnknownProxied = "unknown: neither the server nor dbxtop proxy's account tells whether the server still holds " +
		"this ended operation (the status line above says why)"
	whyIdleUnknown = "? (unknown: no server API tells when the owning client last called; " +
		"`dbxtop proxy` on the client's path would tell (--proxy))"
)

// onlySelectionError: the snapshot's only failing call is the warehouse
// listing, which answered but matched none of --warehouse (noWarehouses
// says so in full).
func onlySelectionError(ctx *programContext) bool {
	ws := ctx.workspace()
	if l := ws.Listing; l == nil || l.Matched > 0 || len(ws.Warehouses) == 0 {
		return false
	}
	for _, e := range ctx.snap.Errors {
		if e.Kind != model.KindTruncated && e.Call != "ListWarehouses" {
			return false
		}
	}
	return true
}
