package model

import (
	"strings"
	"time"
)

// EventKind names what happened.
type EventKind string

const (
	EventDiscovered  EventKind = "discovered"   // a new operation is followed
	EventStateChange EventKind = "state"        // server state changed
	EventRetry       EventKind = "retry"        // a call failed and will be retried
	EventGiveUp      EventKind = "give-up"      // a call gave up (Err set)
	EventFlagRaised  EventKind = "flag-raised"  // Flag set
	EventFlagCleared EventKind = "flag-cleared" // Flag set
	EventAction      EventKind = "action"       // an operator action started or ended
	EventCloseFailed EventKind = "close-failed" // a close attempt failed; retry queued
	EventCapacity    EventKind = "capacity"     // endpoint usage or exhaustion changed
	EventGone        EventKind = "gone"         // an operation disappeared from the server
	// EventNotFollowed: ended operations dropped by the bound on how many
	// are followed (docs/model.md).
	EventNotFollowed EventKind = "not-followed"
	// EventUnknown stands for a kind this dbxtop does not know: another
	// process's event (a newer or a hostile serve's). SanitizeEvent puts it
	// in place of the kind and keeps the kind, cleaned, in the message.
	EventUnknown EventKind = "unknown"
)

// Known reports whether k is one of the kinds above.
func (k EventKind) Known() bool {
	switch k {
	case EventDiscovered, EventStateChange, EventRetry, EventGiveUp, EventFlagRaised,
		EventFlagCleared, EventAction, EventCloseFailed, EventCapacity, EventGone, EventNotFollowed, EventUnknown:
		return true
	}
	return false
}

// Event is one typed engine event: plain data, emitted by the poller and
// rendered by the TUI's Events view and the incident report.
type Event struct {
	At          time.Time
	Kind        EventKind
	StatementID string // "" for workspace or endpoint events
	Endpoint    string
	Call        string
	Message     string
	RequestID   string
	Err         *ErrorInfo
	Flag        *Flag
	// Workspace names the watched workspace (its context) when several
	// are watched (see Fleet); "" otherwise.
	Workspace string
}

// AnyRequestID is the event's request id, or else its error's: the id an
// operator quotes to the workspace's support.
func (e Event) AnyRequestID() string {
	if e.RequestID == "" && e.Err != nil {
		return e.Err.RequestID
	}
	return e.RequestID
}

// Text is what happened, in one line: the message, the flag (unless the
// message already names it) and the error, without the request id (see
// AnyRequestID), which views show on its own. The Events view and the
// incident report both show this.
func (e Event) Text() string {
	s := e.Message
	if e.Flag != nil && !strings.Contains(s, string(e.Flag.Kind)) {
		f := string(e.Flag.Kind) + " (" + string(e.Flag.Severity) + ")"
		if e.Flag.Detail != "" {
			f += " " + e.Flag.Detail
		}
		if s == "" {
			s = f
		} else {
			s += ": " + f
		}
	}
	if e.Err != nil {
		if s != "" {
			s += ": "
		}
		s += e.Err.LineWithoutID()
	}
	return s
}
