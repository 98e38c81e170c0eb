package thrift

import (
	"fmt"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

const statusError = tcliservice.TStatusCode_ERROR_STATUS

// checkStatus turns a TStatus into the contract's errors: ERROR is a
// *sources.ServerError, INVALID_HANDLE wraps sources.ErrHandleGone. subject
// names what the call was about (a statement or session id) for the text.
func checkStatus(call, subject string, st *tcliservice.TStatus) error {
	if st == nil {
		return &DecodeError{Call: call, Err: fmt.Errorf("answer has no status")}
	}
	switch st.StatusCode {
	case tcliservice.TStatusCode_SUCCESS_STATUS,
		tcliservice.TStatusCode_SUCCESS_WITH_INFO_STATUS,
		tcliservice.TStatusCode_STILL_EXECUTING_STATUS:
		return nil
	case tcliservice.TStatusCode_INVALID_HANDLE_STATUS:
		msg := statusMessage(st)
		if msg != "" {
			msg = ": " + msg
		}
		return fmt.Errorf("thrift %s %s: invalid handle: %w%s", call, subject, sources.ErrHandleGone, msg)
	default:
		return &sources.ServerError{
			Call:       call,
			StatusCode: int32(st.StatusCode),
			SQLState:   st.GetSqlState(),
			ErrorCode:  st.GetErrorCode(),
			Message:    statusMessage(st),
		}
	}
}

// statusMessage prefers the user-facing display message; errorMessage
// often carries a server stack trace.
func statusMessage(st *tcliservice.TStatus) string {
	if m := st.GetDisplayMessage(); m != "" {
		return m
	}
	return st.GetErrorMessage()
}
