package model

import "strings"

// State is dbxtop's one normalised operation state. Thrift TOperationState,
// Statement Execution API states and Query History statuses all map onto it.
type State string

const (
	StatePending  State = "PENDING"
	StateRunning  State = "RUNNING"
	StateFinished State = "FINISHED"
	StateFailed   State = "FAILED"
	StateCanceled State = "CANCELED"
	StateClosed   State = "CLOSED"
	StateUnknown  State = "UNKNOWN"
)

// Terminal reports whether the server has stopped executing the operation.
func (s State) Terminal() bool {
	switch s {
	case StateFinished, StateFailed, StateCanceled, StateClosed:
		return true
	}
	return false
}

// Live reports whether the operation still executes (or may) on the server.
func (s State) Live() bool { return s == StatePending || s == StateRunning }

// thriftStates maps TOperationState (by its i32 value) to State.
//
//	INITIALIZED=0 PENDING   | RUNNING=1 RUNNING | FINISHED=2 FINISHED
//	CANCELED=3   CANCELED  | CLOSED=4  CLOSED  | ERROR=5    FAILED
//	UKNOWN=6     UNKNOWN   | PENDING=7 PENDING | TIMEDOUT=8 FAILED
var thriftStates = map[int32]State{
	0: StatePending,
	1: StateRunning,
	2: StateFinished,
	3: StateCanceled,
	4: StateClosed,
	5: StateFailed,
	6: StateUnknown,
	7: StatePending,
	8: StateFailed,
}

// FromThrift normalises a TOperationState value.
func FromThrift(v int32) State {
	if s, ok := thriftStates[v]; ok {
		return s
	}
	return StateUnknown
}

// seaStates maps Statement Execution API states.
var seaStates = map[string]State{
	"PENDING":   StatePending,
	"RUNNING":   StateRunning,
	"SUCCEEDED": StateFinished,
	"FAILED":    StateFailed,
	"CANCELED":  StateCanceled,
	"CLOSED":    StateClosed,
}

// FromSEA normalises a Statement Execution API state.
func FromSEA(v string) State {
	if s, ok := seaStates[strings.ToUpper(v)]; ok {
		return s
	}
	return StateUnknown
}

// historyStates maps Query History statuses (sql.QueryStatus).
var historyStates = map[string]State{
	"QUEUED":    StatePending,
	"STARTED":   StatePending,
	"COMPILING": StateRunning,
	"COMPILED":  StateRunning,
	"RUNNING":   StateRunning,
	"FINISHED":  StateFinished,
	"FAILED":    StateFailed,
	"CANCELED":  StateCanceled,
}

// FromQueryHistory normalises a Query History status.
func FromQueryHistory(v string) State {
	if s, ok := historyStates[strings.ToUpper(v)]; ok {
		return s
	}
	return StateUnknown
}

// stateOrder ranks states along an operation's life, for sorting.
var stateOrder = map[State]int{
	StatePending:  0,
	StateRunning:  1,
	StateFinished: 2,
	StateFailed:   3,
	StateCanceled: 4,
	StateClosed:   5,
	StateUnknown:  6,
}

// ParseState accepts one of the normalised state names of docs/model.md (States)
// (exactly, upper case) and reports whether it is one.
func ParseState(v string) (State, bool) {
	s := State(v)
	_, ok := stateOrder[s]
	return s, ok
}
