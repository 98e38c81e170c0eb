package model

import (
	"encoding/json"
	"fmt"

	"github.com/dbxtop/dbxtop/textfmt"
)

// The wire structs below fix the snapshot JSON key order (encoding/json keeps struct
// field order). Keys after the contract keys docs/model.md lists are dbxtop's additions that
// make the encoding lossless (first_seen_at, samples, …).

type snapshotWire struct {
	Schema      string          `json:"schema"`
	GeneratedAt jsonTime        `json:"generated_at"`
	Workspace   workspaceWire   `json:"workspace"`
	Summary     Summary         `json:"summary"`
	Operations  []operationWire `json:"operations"`
	Endpoints   []endpointWire  `json:"endpoints"`
	Errors      []ErrorInfo     `json:"errors"`
	Clients     []ClientStats   `json:"clients"`
	// Workspaces is present when several workspaces are watched.
	Workspaces []WorkspaceStatus `json:"workspaces,omitempty"`
}

type workspaceWire struct {
	Host       string   `json:"host"`
	Warehouses []string `json:"warehouses"`
	// NotFollowed: ended operations the bound dropped (an addition).
	NotFollowed int64 `json:"not_followed,omitempty"`
}

type operationWire struct {
	StatementID       string      `json:"statement_id"`
	WarehouseID       string      `json:"warehouse_id"`
	User              string      `json:"user"`
	ClientApplication string      `json:"client_application"`
	State             State       `json:"state"`
	SQL               string      `json:"sql"`
	StartedAt         jsonTime    `json:"started_at"`
	CompletedAt       jsonTime    `json:"completed_at"`
	LastPollOKAt      jsonTime    `json:"last_poll_ok_at"`
	InactiveForS      jsonSeconds `json:"inactive_for_s"`
	ReapedInS         jsonSeconds `json:"reaped_in_s"`
	Open              *bool       `json:"open"`
	Poll              PollStats   `json:"poll"`
	Close             closeWire   `json:"close"`
	Flags             []Flag      `json:"flags"`
	LastError         *ErrorInfo  `json:"last_error"`
	// Additions beyond the contract keys.
	ServerError        string   `json:"server_error"`
	FirstSeenAt        jsonTime `json:"first_seen_at"`
	ClientLastActivity jsonTime `json:"client_last_activity"` // null: unknown
	Adopted            bool     `json:"adopted"`
	Gone               bool     `json:"gone"`
	StatusSource       string   `json:"status_source,omitempty"`
	StatusNote         string   `json:"status_note,omitempty"`
	Workspace          string   `json:"workspace,omitempty"` // several workspaces: which one
	// Proxy is what `dbxtop proxy` saw (docs/proxy.md); null when none.
	Proxy *proxyWire `json:"proxy"`
	// Evidence: each belief's source and when dbxtop last heard it.
	Evidence *evidenceWire `json:"evidence"`
}

type closeWire struct {
	State     CloseState `json:"state"`
	Attempts  int        `json:"attempts"`
	LastError *ErrorInfo `json:"last_error"`
	NextTryAt jsonTime   `json:"next_try_at"` // addition: when the queued retry runs
}

type endpointWire struct {
	Name             string      `json:"name"`
	Type             string      `json:"type"`
	State            string      `json:"state"`
	Rows             int64       `json:"rows"`
	RowLimit         int64       `json:"row_limit"`
	Usage            *float64    `json:"usage"` // null when the row limit is unknown
	GrowthRowsPerMin float64     `json:"growth_rows_per_min"`
	ETAFullS         jsonSeconds `json:"eta_full_s"`
	// Exhausted is true whenever the EXHAUSTED flag is raised (the server
	// refused writes, or usage reached 100 %); ServerExhausted is the
	// server's own answer alone.
	Exhausted       bool         `json:"exhausted"`
	ServerExhausted *bool        `json:"server_exhausted"` // nil only in documents written before it existed
	LastError       *ErrorInfo   `json:"last_error"`
	Flags           []Flag       `json:"flags"`
	Indexes         []indexWire  `json:"indexes"`
	RowLimitSource  *LimitSource `json:"row_limit_source"` // null when no rule applies
	// Additions beyond the contract keys (docs/capacity.md).
	RowLimitWhy     string        `json:"row_limit_why"`
	Learned         *LearnedLimit `json:"learned_limit"`
	StateMessage    string        `json:"state_message"`
	NumIndexes      int           `json:"num_indexes"`
	ThroughputPct   *float64      `json:"throughput_utilization_pct"`
	WriteRowsPerMin float64       `json:"write_rows_per_min"`
	ForecastWindowS float64       `json:"forecast_window_s"`
	ObservedAt      jsonTime      `json:"observed_at"`
	Samples         []sampleWire  `json:"samples"`
	// ListingError: the last endpoint listing failed; the figures are
	// those of observed_at (absent when the last listing succeeded).
	ListingError *ErrorInfo `json:"listing_error,omitempty"`
	Workspace    string     `json:"workspace,omitempty"`
}

type indexWire struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Dimension int    `json:"dimension"`
	Rows      int64  `json:"rows"`
	Ready     bool   `json:"ready"`
	Message   string `json:"message"`
}

type sampleWire struct {
	At   jsonTime `json:"at"`
	Rows int64    `json:"rows"`
}

// MarshalJSON encodes the snapshot exactly as docs/model.md lists it, with
// the summary computed from the rows.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	w := snapshotWire{
		Schema:      SnapshotSchema,
		GeneratedAt: jsonTime{s.GeneratedAt},
		Workspace:   workspaceWire{Host: s.Workspace.Host, Warehouses: nonNil(s.Workspace.Warehouses), NotFollowed: s.Workspace.NotFollowed},
		Summary:     s.Summary(),
		Operations:  make([]operationWire, 0, len(s.Operations)),
		Endpoints:   make([]endpointWire, 0, len(s.Endpoints)),
		Errors:      nonNil(s.Errors),
		Clients:     nonNil(s.Clients),
		Workspaces:  s.Workspaces,
	}
	for _, o := range s.Operations {
		w.Operations = append(w.Operations, o.wire())
	}
	for _, e := range s.Endpoints {
		w.Endpoints = append(w.Endpoints, e.wire())
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes snapshot JSON. Unknown keys are ignored (newer minor
// additions); the schema, states, severities and close states are checked.
// The summary is not read: it is recomputed from the rows. Every string is
// cleaned as NewSnapshot cleans (the document may come from a hostile
// peer: terminal control sequences never reach a screen from it).
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var w snapshotWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if w.Schema != SnapshotSchema {
		return fmt.Errorf("snapshot: schema %q is not %q", truncate(w.Schema, 60), SnapshotSchema)
	}
	// Every string is cleaned here, field by field, as it leaves the wire
	// structs (ErrorInfo and ClientStats clean their own in UnmarshalJSON);
	// TestDecodedSnapshotStringsAreClean fails on a field that is not.
	out := Snapshot{
		GeneratedAt: w.GeneratedAt.Time,
		Workspace: Workspace{Host: textfmt.Line(w.Workspace.Host), Warehouses: nilIfEmpty(lines(w.Workspace.Warehouses)),
			NotFollowed: max(w.Workspace.NotFollowed, 0)},
		Errors:     nilIfEmpty(w.Errors),
		Clients:    nilIfEmpty(w.Clients),
		Workspaces: nilIfEmpty(w.Workspaces),
	}
	for i := range out.Workspaces {
		ws := &out.Workspaces[i]
		ws.Name, ws.Host, ws.Warehouses = textfmt.Line(ws.Name), textfmt.Line(ws.Host), lines(ws.Warehouses)
	}
	for i, ow := range w.Operations {
		v, err := ow.view()
		if err != nil {
			return fmt.Errorf("snapshot: operations[%d]: %w", i, err)
		}
		out.Operations = append(out.Operations, &v)
	}
	for i, ew := range w.Endpoints {
		v, err := ew.view()
		if err != nil {
			return fmt.Errorf("snapshot: endpoints[%d]: %w", i, err)
		}
		out.Endpoints = append(out.Endpoints, v)
	}
	out.order() // the peer's order is not taken on trust
	*s = out
	return nil
}

// MarshalJSON encodes one operation as in the snapshot's operations[].
func (v OperationView) MarshalJSON() ([]byte, error) { return json.Marshal(v.wire()) }

// MarshalJSON encodes one endpoint as in the snapshot's endpoints[].
func (v EndpointView) MarshalJSON() ([]byte, error) { return json.Marshal(v.wire()) }

func (v OperationView) wire() operationWire {
	state := v.State
	if state == "" {
		state = StateUnknown
	}
	cs := v.Close.State
	if cs == "" {
		cs = CloseNA
	}
	var last jsonTime
	if v.ClientActivityKnown {
		last = jsonTime{v.ClientLastActivity}
	}
	var open *bool
	if v.Open != nil {
		b := *v.Open
		open = &b
	}
	return operationWire{
		StatementID: v.StatementID, WarehouseID: v.WarehouseID, User: v.User,
		ClientApplication: v.ClientApplication, State: state, SQL: v.SQL,
		StartedAt: jsonTime{v.StartedAt}, CompletedAt: jsonTime{v.CompletedAt},
		LastPollOKAt: jsonTime{v.LastPollOKAt},
		InactiveForS: secondsOf(v.InactiveFor), ReapedInS: secondsOf(v.ReapedIn),
		Open: open, Poll: v.Poll,
		Close: closeWire{State: cs, Attempts: v.Close.Attempts, LastError: v.Close.LastError,
			NextTryAt: jsonTime{v.Close.NextTry}},
		Flags: nonNil(v.Flags), LastError: v.LastError,
		ServerError: v.ServerError, FirstSeenAt: jsonTime{v.FirstSeenAt},
		ClientLastActivity: last, Adopted: v.Adopted, Gone: v.Gone,
		StatusSource: v.StatusSource, StatusNote: v.StatusNote, Workspace: v.Workspace,
		Proxy: v.Proxy.wire(), Evidence: EvidenceOf(v.Operation).wire(),
	}
}

func (w operationWire) view() (OperationView, error) {
	state, ok := ParseState(string(w.State))
	if !ok {
		return OperationView{}, fmt.Errorf("unknown state %q", truncate(string(w.State), 40))
	}
	switch w.Close.State {
	case CloseNA, ClosePending, CloseClosed, CloseFailed:
	default:
		return OperationView{}, fmt.Errorf("unknown close state %q", truncate(string(w.Close.State), 40))
	}
	if err := decodeFlags(w.Flags); err != nil {
		return OperationView{}, err
	}
	line := textfmt.Line
	return OperationView{
		Operation: &Operation{
			StatementID: line(w.StatementID), WarehouseID: line(w.WarehouseID), User: line(w.User),
			ClientApplication: line(w.ClientApplication), SQL: textfmt.Block(w.SQL), State: state,
			StartedAt: w.StartedAt.Time, CompletedAt: w.CompletedAt.Time,
			ServerError:         line(w.ServerError),
			ClientActivityKnown: !w.ClientLastActivity.IsZero(),
			ClientLastActivity:  w.ClientLastActivity.Time,
			Open:                w.Open,
			FirstSeenAt:         w.FirstSeenAt.Time, LastPollOKAt: w.LastPollOKAt.Time,
			Poll: w.Poll,
			Close: CloseInfo{State: w.Close.State, Attempts: w.Close.Attempts,
				LastError: w.Close.LastError, NextTry: w.Close.NextTryAt.Time},
			LastError: w.LastError, Adopted: w.Adopted, Gone: w.Gone,
			StatusSource: line(w.StatusSource), StatusNote: line(w.StatusNote), Workspace: line(w.Workspace),
			Proxy:       w.Proxy.account(),
			OpenByProxy: w.Evidence != nil && w.Evidence.Open != nil && w.Evidence.Open.Source == EvidenceViaProxy,
		},
		InactiveFor: w.InactiveForS.ptr(),
		ReapedIn:    w.ReapedInS.ptr(),
		Flags:       nilIfEmpty(w.Flags),
	}, nil
}

func (v EndpointView) wire() endpointWire {
	var usage *float64
	if v.RowLimit > 0 {
		u := v.Usage
		usage = &u
	}
	w := endpointWire{
		Name: v.Name, Type: v.Type, State: v.State, Rows: v.Rows, RowLimit: v.RowLimit,
		Usage: usage, GrowthRowsPerMin: v.GrowthPerMin, ETAFullS: secondsOf(v.ETAFull),
		Exhausted: v.Exhausted || v.HasFlag(FlagExhausted), ServerExhausted: &v.Exhausted,
		LastError: v.LastError, Flags: nonNil(v.Flags),
		Indexes:        make([]indexWire, 0, len(v.Indexes)),
		RowLimitSource: sourceOrNil(v.RowLimitSource), RowLimitWhy: v.RowLimitWhy, Learned: v.Learned,
		StateMessage: v.StateMessage, NumIndexes: v.NumIndexes, ThroughputPct: v.Throughput,
		WriteRowsPerMin: v.WriteRowsPerMin, ForecastWindowS: ForecastWindow.Seconds(),
		ObservedAt:   jsonTime{v.ObservedAt},
		Samples:      make([]sampleWire, 0, len(v.Samples)),
		ListingError: v.ListingError,
		Workspace:    v.Workspace,
	}
	for _, ix := range v.Indexes {
		w.Indexes = append(w.Indexes, indexWire(ix))
	}
	for _, sm := range v.Samples {
		w.Samples = append(w.Samples, sampleWire{At: jsonTime{sm.At}, Rows: sm.Rows})
	}
	return w
}

func (w endpointWire) view() (EndpointView, error) {
	if err := decodeFlags(w.Flags); err != nil {
		return EndpointView{}, err
	}
	line := textfmt.Line
	if l := w.Learned; l != nil {
		l.RequestID, l.Via = line(l.RequestID), line(l.Via)
	}
	v := EndpointView{
		Endpoint: Endpoint{
			Name: line(w.Name), Type: line(w.Type), State: line(w.State), RowLimit: w.RowLimit,
			Exhausted: w.serverExhausted(), LastError: w.LastError, ObservedAt: w.ObservedAt.Time, ListingError: w.ListingError,
			RowLimitSource: LimitSource(line(string(w.RowLimitSource.value()))), RowLimitWhy: line(w.RowLimitWhy), Learned: w.Learned,
			StateMessage: line(w.StateMessage), NumIndexes: w.NumIndexes, Throughput: w.ThroughputPct,
			Workspace: line(w.Workspace),
		},
		Rows: w.Rows, GrowthPerMin: w.GrowthRowsPerMin, ETAFull: w.ETAFullS.ptr(),
		WriteRowsPerMin: w.WriteRowsPerMin,
		Flags:           nilIfEmpty(w.Flags),
	}
	if w.Usage != nil && w.RowLimit > 0 {
		v.Usage = *w.Usage
	}
	for _, ix := range w.Indexes {
		ix.Name, ix.Type, ix.Message = line(ix.Name), line(ix.Type), line(ix.Message)
		v.Indexes = append(v.Indexes, Index(ix))
	}
	for _, sm := range w.Samples {
		v.Samples = append(v.Samples, Sample{At: sm.At.Time, Rows: sm.Rows})
	}
	return v, nil
}

func sourceOrNil(s LimitSource) *LimitSource {
	if s == LimitNone {
		return nil
	}
	return &s
}

func (s *LimitSource) value() LimitSource {
	if s == nil {
		return LimitNone
	}
	return *s
}

// decodeFlags checks decoded flags and cleans their text in place.
func decodeFlags(flags []Flag) error {
	for i, f := range flags {
		if f.Severity != SeverityWarning && f.Severity != SeverityCritical {
			return fmt.Errorf("flags[%d]: severity %q is not warning or critical", i, truncate(string(f.Severity), 40))
		}
		if f.Kind == "" {
			return fmt.Errorf("flags[%d]: empty kind", i)
		}
		flags[i].Kind = FlagKind(textfmt.Line(string(f.Kind)))
		flags[i].Detail = textfmt.Line(f.Detail)
	}
	return nil
}

// nonNil makes empty lists encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// nilIfEmpty makes decoded empty lists nil, the zero value the rest of the
// model builds.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// serverExhausted is the server's own answer; documents written before
// server_exhausted existed only have exhausted.
func (w endpointWire) serverExhausted() bool {
	if w.ServerExhausted != nil {
		return *w.ServerExhausted
	}
	return w.Exhausted
}
