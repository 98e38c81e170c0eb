package model

import "github.com/dbxtop/dbxtop/textfmt"

// Every string in a Snapshot that came from the workspace (SQL, user and
// client names, warehouse, endpoint and index names, server messages, error
// bodies) is made harmless here, once, with textfmt: a snapshot is safe to
// print on a terminal, in a report, a log or JSON. The engine's own state is
// never modified: shared values (error pointers, index slices) are copied
// before they change. Single-line fields stay single-line; only the SQL
// keeps its newlines and tabs.

func (s *Snapshot) sanitize() {
	s.Workspace.Host = textfmt.Line(s.Workspace.Host)
	s.Workspace.Warehouses = lines(s.Workspace.Warehouses)
	for i := range s.Errors {
		s.Errors[i] = sanitizeErrorValue(s.Errors[i])
	}
	// Operation views are cleaned when they are built (EvaluateView).
	for i := range s.Endpoints {
		s.Endpoints[i].sanitize()
	}
}

func (o *OperationView) sanitize() {
	o.StatementID = textfmt.Line(o.StatementID)
	o.WarehouseID = textfmt.Line(o.WarehouseID)
	o.User = textfmt.Line(o.User)
	o.ClientApplication = textfmt.Line(o.ClientApplication)
	o.SQL = textfmt.Block(o.SQL)
	o.ServerError = textfmt.Line(o.ServerError)
	o.State = State(textfmt.Line(string(o.State)))
	o.LastError = SanitizeError(o.LastError)
	o.Close.LastError = SanitizeError(o.Close.LastError)
	sanitizeFlags(o.Flags)
}

func (e *EndpointView) sanitize() {
	e.Name = textfmt.Line(e.Name)
	e.Type = textfmt.Line(e.Type)
	e.State = textfmt.Line(e.State)
	e.LastError = SanitizeError(e.LastError)
	sanitizeFlags(e.Flags)
	copied := false
	for i, ix := range e.Indexes {
		n, m := textfmt.Line(ix.Name), textfmt.Line(ix.Message)
		if n == ix.Name && m == ix.Message {
			continue
		}
		if !copied { // the slice is the engine's: copy before the first change
			e.Indexes, copied = append([]Index(nil), e.Indexes...), true
		}
		e.Indexes[i].Name, e.Indexes[i].Message = n, m
	}
}

// Flags are built per snapshot, so they are cleaned in place.
func sanitizeFlags(fs []Flag) {
	for i := range fs {
		fs[i].Detail = textfmt.Line(fs[i].Detail)
	}
}

// SanitizeEvent returns ev with every string made safe for one line, and
// a kind that is not one of the known kinds replaced by EventUnknown (the
// kind, cleaned and cut short, goes to the front of the message). The
// engine's snapshots are cleaned by NewSnapshot; its events are not, so
// every consumer of the event stream (the TUI, serve's /api/v1/events)
// cleans them here, and so does the decoder of serve's stream (attach).
func SanitizeEvent(ev Event) Event {
	if !ev.Kind.Known() {
		k := truncate(textfmt.Line(string(ev.Kind)), 40)
		ev.Message = "(kind " + k + ") " + ev.Message
		ev.Kind = EventUnknown
	}
	ev.StatementID = textfmt.Line(ev.StatementID)
	ev.Workspace = textfmt.Line(ev.Workspace)
	ev.Endpoint = textfmt.Line(ev.Endpoint)
	ev.Call = textfmt.Line(ev.Call)
	ev.Message = textfmt.Line(ev.Message)
	ev.RequestID = textfmt.Line(ev.RequestID)
	ev.Err = SanitizeError(ev.Err)
	if ev.Flag != nil {
		f := *ev.Flag
		f.Detail = textfmt.Line(f.Detail)
		f.Kind = FlagKind(textfmt.Line(string(f.Kind)))
		f.Severity = Severity(textfmt.Line(string(f.Severity)))
		ev.Flag = &f
	}
	return ev
}

// SanitizeError returns e with every server-supplied field made safe for
// one line; e itself is returned when nothing changes, else a copy.
func SanitizeError(e *ErrorInfo) *ErrorInfo {
	if e == nil {
		return nil
	}
	c := sanitizeErrorValue(*e)
	if c == *e {
		return e
	}
	return &c
}

func sanitizeErrorValue(e ErrorInfo) ErrorInfo {
	e.Call = textfmt.Line(e.Call)
	e.ErrorCode = textfmt.Line(e.ErrorCode)
	e.Message = textfmt.Line(e.Message)
	e.RequestID = textfmt.Line(e.RequestID)
	e.Kind = ErrorKind(textfmt.Line(string(e.Kind)))
	e.Workspace = textfmt.Line(e.Workspace)
	return e
}

func lines(ss []string) []string {
	for i, s := range ss {
		if c := textfmt.Line(s); c != s {
			out := append([]string(nil), ss...)
			for j := i; j < len(out); j++ {
				out[j] = textfmt.Line(out[j])
			}
			return out
		}
	}
	return ss
}
