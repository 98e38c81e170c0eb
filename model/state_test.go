package model

import "testing"

// The expected tables are written out independently of the code's maps so
// that a wrong entry in either shows up.

func TestFromThriftEveryState(t *testing.T) {
	cases := []struct {
		name string
		v    int32
		want State
	}{
		{"INITIALIZED_STATE", 0, StatePending},
		{"RUNNING_STATE", 1, StateRunning},
		{"FINISHED_STATE", 2, StateFinished},
		{"CANCELED_STATE", 3, StateCanceled},
		{"CLOSED_STATE", 4, StateClosed},
		{"ERROR_STATE", 5, StateFailed},
		{"UKNOWN_STATE", 6, StateUnknown},
		{"PENDING_STATE", 7, StatePending},
		{"TIMEDOUT_STATE", 8, StateFailed},
		{"out of range high", 9, StateUnknown},
		{"negative", -1, StateUnknown},
	}
	for _, c := range cases {
		if got := FromThrift(c.v); got != c.want {
			t.Errorf("FromThrift(%d %s) = %s, want %s", c.v, c.name, got, c.want)
		}
	}
	if len(thriftStates) != 9 {
		t.Errorf("thriftStates has %d entries, the IDL has 9 TOperationState values", len(thriftStates))
	}
}

func TestFromSEAEveryState(t *testing.T) {
	cases := map[string]State{
		"PENDING":   StatePending,
		"RUNNING":   StateRunning,
		"SUCCEEDED": StateFinished,
		"FAILED":    StateFailed,
		"CANCELED":  StateCanceled,
		"CLOSED":    StateClosed,
		"succeeded": StateFinished, // case-insensitive
		"FINISHED":  StateUnknown,  // a Query History word, not a SEA state
		"":          StateUnknown,
	}
	for in, want := range cases {
		if got := FromSEA(in); got != want {
			t.Errorf("FromSEA(%q) = %s, want %s", in, got, want)
		}
	}
	if len(seaStates) != 6 {
		t.Errorf("seaStates has %d entries, SEA has 6 states", len(seaStates))
	}
}

func TestFromQueryHistoryEveryStatus(t *testing.T) {
	cases := map[string]State{
		"QUEUED":    StatePending,
		"STARTED":   StatePending,
		"COMPILING": StateRunning,
		"COMPILED":  StateRunning,
		"RUNNING":   StateRunning,
		"FINISHED":  StateFinished,
		"FAILED":    StateFailed,
		"CANCELED":  StateCanceled,
		"running":   StateRunning,
		"SUCCEEDED": StateUnknown, // a SEA word, not a Query History status
		"bogus":     StateUnknown,
	}
	for in, want := range cases {
		if got := FromQueryHistory(in); got != want {
			t.Errorf("FromQueryHistory(%q) = %s, want %s", in, got, want)
		}
	}
	if len(historyStates) != 8 {
		t.Errorf("historyStates has %d entries, sql.QueryStatus has 8 values", len(historyStates))
	}
}

func TestStatePredicates(t *testing.T) {
	cases := []struct {
		s              State
		terminal, live bool
	}{
		{StatePending, false, true},
		{StateRunning, false, true},
		{StateFinished, true, false},
		{StateFailed, true, false},
		{StateCanceled, true, false},
		{StateClosed, true, false},
		{StateUnknown, false, false},
	}
	for _, c := range cases {
		if c.s.Terminal() != c.terminal || c.s.Live() != c.live {
			t.Errorf("%s: Terminal=%v Live=%v, want %v %v", c.s, c.s.Terminal(), c.s.Live(), c.terminal, c.live)
		}
		if got, ok := ParseState(string(c.s)); !ok || got != c.s {
			t.Errorf("ParseState(%q) = %q, %v", c.s, got, ok)
		}
	}
	if _, ok := ParseState("running"); ok {
		t.Error("ParseState accepts lower case; snapshot JSON state names are upper case")
	}
}
