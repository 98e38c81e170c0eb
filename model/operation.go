package model

import "time"

// Operation is one statement on a warehouse, as dbxtop knows it: what the
// server reports plus what dbxtop itself observed while following it.
// Zero times mean "unknown".
type Operation struct {
	StatementID       string // Thrift operation GUID as lower-case UUID
	WarehouseID       string
	User              string
	ClientApplication string
	SQL               string
	State             State
	StartedAt         time.Time
	CompletedAt       time.Time
	// ServerError is the server's error/display message for a failed
	// operation; REAPED is recognised from it.
	ServerError string

	// ClientActivityKnown is false when the source cannot tell when the
	// owning client last called the server (then INACTIVE is never raised
	// and the column shows "?").
	ClientActivityKnown bool
	ClientLastActivity  time.Time
	// Open is nil when unknown: whether the server still holds the
	// operation (not yet closed or reaped).
	Open *bool

	FirstSeenAt  time.Time
	LastPollOKAt time.Time
	Poll         PollStats
	Close        CloseInfo
	LastError    *ErrorInfo
	Adopted      bool
	// Gone is set when the server no longer has the operation (its handle
	// is invalid); State is then the final state the evidence gave (query
	// history, the Statement Execution API), UNKNOWN when nothing said.
	Gone bool
	// OpenByProxy: Open is a proxy's proof (it relayed the handle and saw
	// no close), not a server's answer; it ages (docs/model.md, "Evidence").
	OpenByProxy bool
	// Proxy is what `dbxtop proxy` saw of it; nil when no proxy did.
	Proxy *ProxyAccount
	// Workspace names the watched workspace (its context) when several
	// are watched; "" otherwise.
	Workspace string
	// StatusSource says which call last confirmed the state ("thrift",
	// "statement_api", "query_history"); StatusNote says why it came from
	// there when that is not the usual path (a warehouse that is not
	// running is never asked over Thrift: that would start it).
	StatusSource string
	StatusNote   string
}

// Status sources (Operation.StatusSource).
const (
	StatusViaThrift       = "thrift"
	StatusViaStatementAPI = "statement_api"
	StatusViaHistory      = "query_history"
)

// PollStats counts dbxtop's own status polls of an operation.
type PollStats struct {
	OK      int `json:"ok"`
	Failed  int `json:"failed"`
	Retries int `json:"retries"`
}

// CloseState is dbxtop's own close bookkeeping for an operation.
type CloseState string

const (
	CloseNA      CloseState = "n/a"     // dbxtop never tried to close it
	ClosePending CloseState = "pending" // a close is queued or in flight
	CloseClosed  CloseState = "closed"  // dbxtop closed it (or the server says it is gone)
	CloseFailed  CloseState = "failed"  // the last attempt failed; a retry is queued
)

// CloseInfo is the close queue's view of one operation.
type CloseInfo struct {
	State     CloseState
	Attempts  int
	LastError *ErrorInfo
	NextTry   time.Time // zero when nothing is queued
}

// ErrorKind classifies an observed error (the error object of docs/model.md, Snapshot JSON).
type ErrorKind string

const (
	KindTransport   ErrorKind = "transport"
	KindThrottled   ErrorKind = "throttled"
	KindUnavailable ErrorKind = "unavailable"
	KindPermanent   ErrorKind = "permanent"
	KindCanceled    ErrorKind = "canceled"
	// KindTruncated is a listing that left something out (a page cap, the
	// time budget, a repeated page token); Seen says how much it read.
	KindTruncated ErrorKind = "truncated"
	// KindUnread is an observation round that could not read the status of
	// the operations it follows (snapshot: exit 3).
	KindUnread ErrorKind = "unread"
)

// ErrorInfo is the serialisable summary of an error: what the poller knew
// when a call gave up.
type ErrorInfo struct {
	Kind       ErrorKind     `json:"kind"`
	Call       string        `json:"call"`
	ErrorCode  string        `json:"error_code"`
	HTTPStatus int           `json:"http_status"`
	Message    string        `json:"message"`
	RequestID  string        `json:"request_id"`
	Attempts   int           `json:"attempts"`
	Elapsed    time.Duration `json:"-"`
	// Workspace names the watched workspace (its context) when several
	// are watched; "" otherwise.
	Workspace string `json:"-"`
	// Seen counts what a truncated listing did read (KindTruncated), or
	// the operations whose status was read (KindUnread).
	Seen int `json:"-"`
}
