package tui

import (
	"strconv"
	"strings"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/textfmt"
)

// column is one Operations table column. Widths are fixed except SQL,
// which takes what is left; drop is the order in which columns collapse
// on a narrow terminal (lower drops first, 0 never drops).
type column struct {
	id    colID
	title string
	width int
	drop  int
	sort  sortKey
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
)

// sqlMin is the narrowest SQL column worth showing.
const sqlMin = 12

var allColumns = []column{
	{colFlag, "FLAG", 21, 0, sortFlag},
	{colID_, "STATEMENT", 9, 0, sortID},
	{colState, "STATE", 8, 0, sortState},
	{colUser, "USER", 11, 5, sortUser},
	{colWarehouse, "WAREHOUSE", 10, 4, sortWarehouse},
	{colAge, "AGE", 6, 6, sortAge},
	{colInactive, "IDLE/REAPER", 14, 0, sortInactivity},
	{colClose, "CLOSE", 13, 2, -1},
	{colRetries, "RETRY", 5, 3, sortRetries},
	{colSQL, "SQL", 0, 1, -1},
}

// layout picks the columns that fit width: SQL goes first, then close,
// retries, warehouse, user, age.
func layout(width int) ([]column, int) {
	dropped := 0
	for {
		need := 2 // cursor and space
		var cols []column
		for _, c := range allColumns {
			if c.drop != 0 && c.drop <= dropped {
				continue
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
			}
			return cols, sqlW
		}
		dropped++
	}
}

// opsView renders the column header and only the visible rows: its cost
// depends on the screen height, not on the number of operations.
func (m *Model) opsView() []string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	cols, sqlW := layout(m.ctx.width)
	n := m.tableRows()
	out := make([]string, 0, n+1)

	var hb strings.Builder
	hb.WriteString("  ")
	for _, c := range cols {
		t := c.title
		if c.sort == m.sort && c.sort >= 0 {
			if m.desc {
				t += arrow(g, true)
			} else {
				t += arrow(g, false)
			}
		}
		w := c.width
		if c.id == colSQL {
			w = sqlW
		}
		hb.WriteString(fit(t, w, ""))
		hb.WriteByte(' ')
	}
	out = append(out, st.ColHead.Render(strings.TrimRight(hb.String(), " ")))

	if len(m.rows) == 0 {
		msg := "  no operations"
		if m.filter.text != "" || m.filter.flaggedOnly {
			msg += " match the filter (esc clears it, f toggles flagged only)"
		}
		return append(out, st.Dim.Render(msg))
	}
	end := min(len(m.rows), m.offset+n)
	for i := m.offset; i < end; i++ {
		op := &m.snap.Operations[m.rows[i]]
		out = append(out, m.opRow(op, cols, sqlW, i == m.cursorIdx && m.missing != hidden && op.StatementID == m.cursorID))
	}
	return out
}

func arrow(g Glyphs, desc bool) string {
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
func (m *Model) opRow(op *model.OperationView, cols []column, sqlW int, sel bool) string {
	st, g := &m.ctx.styles, m.ctx.glyphs
	var b strings.Builder
	if sel {
		b.WriteString(g.Cursor + " ")
	} else {
		b.WriteString("  ")
	}
	var flagCell string
	for _, c := range cols {
		w := c.width
		var v string
		switch c.id {
		case colFlag:
			f, more := worstFlag(op.Flags)
			v = flagLabel(f, g)
			if more > 0 {
				v += "+" + strconv.Itoa(more)
			}
			v = fit(v, w, g.Ellipsis)
			if !sel && f.Severity != "" {
				flagCell = v
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
		case colAge:
			a := "?"
			if !op.StartedAt.IsZero() {
				a = textfmt.Duration(max(m.snap.GeneratedAt.Sub(op.StartedAt), 0))
			}
			v = fit(a, w, "")
		case colInactive:
			v = fit(m.idleCell(op), w, "")
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
		return st.Selected.Render(fit(row, m.ctx.width, ""))
	}
	if flagCell != "" {
		f, _ := worstFlag(op.Flags)
		style := st.Warn
		if f.Severity == model.SeverityCritical {
			style = st.Crit
		}
		row = strings.Replace(row, "\x00", style.Render(flagCell), 1)
	}
	return row
}

// idleCell is "1m12s →5m58s": time since the owning client's last call and
// the countdown to the server reaper; "?" when the source cannot tell;
// "-" once the operation stopped running (no inactivity reaper applies).
func (m *Model) idleCell(op *model.OperationView) string {
	if op.InactiveFor == nil {
		if op.State.Terminal() {
			return "-"
		}
		return "?"
	}
	s := textfmt.Duration(*op.InactiveFor)
	if op.ReapedIn != nil {
		s += " " + m.ctx.glyphs.Reaper + textfmt.Duration(*op.ReapedIn)
	}
	return s
}

// closeCell shows a running action first, then dbxtop's close bookkeeping.
func (m *Model) closeCell(op *model.OperationView) string {
	if s, ok := m.busy[op.StatementID]; ok {
		return s
	}
	if r, ok := m.results[op.StatementID]; ok && m.ctx.opts.Now().Sub(r.at) < resultTTL {
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
	return "-"
}
