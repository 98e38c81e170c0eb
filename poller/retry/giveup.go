package retry

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// GiveUpError is what a call returns when the policy stops: which call,
// which operation, how many attempts in how long, why it stopped, and the
// last cause (reachable with errors.Is/As).
type GiveUpError struct {
	Call     Call
	Attempts int
	Elapsed  time.Duration
	Kind     model.ErrorKind
	// Reason says why the policy stopped ("permanent: …", "attempt limit
	// 4 reached", "retry budget exhausted", …).
	Reason string
	Last   error
	// Permanent is true when the error itself ruled out a retry.
	Permanent bool
}

func (e *GiveUpError) Unwrap() error { return e.Last }

func (e *GiveUpError) Error() string {
	head := e.Call.Name
	if e.Call.OpID != "" {
		head += " " + e.Call.OpID
	}
	verb := "gave up"
	switch {
	case e.Kind == model.KindCanceled:
		verb = "canceled"
	case e.Permanent:
		verb = "permanent"
	}
	s := fmt.Sprintf("%s: %s after %d attempt%s in %s", head, verb, e.Attempts, plural(e.Attempts), textfmt.Elapsed(e.Elapsed))
	if e.Reason != "" && !e.Permanent {
		s += " (" + e.Reason + ")"
	}
	return sources.Redact(s + ": " + Describe(e.Last))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Describe renders a cause without repeating the call name.
func Describe(err error) string {
	if err == nil {
		return "no error recorded"
	}
	var he *sources.HTTPError
	if errors.As(err, &he) {
		return he.Detail()
	}
	if d := Classify(Call{Safe: true}, err); d.Kind == model.KindTransport {
		var errno syscall.Errno
		switch {
		case errors.As(err, &errno):
			return "transport: " + errno.Error()
		case errors.Is(err, io.ErrUnexpectedEOF):
			return "transport: unexpected EOF (connection closed mid-answer)"
		case errors.Is(err, io.EOF):
			return "transport: EOF (connection closed without an answer)"
		}
		return "transport: " + err.Error()
	}
	return err.Error()
}

// ErrorInfoOf summarises any error chain for the model: kind, call, code,
// status, message, request_id, attempts and elapsed. nil for nil.
func ErrorInfoOf(err error) *model.ErrorInfo {
	if err == nil {
		return nil
	}
	info := &model.ErrorInfo{Message: sources.Redact(Describe(err)), Attempts: 1}
	var g *GiveUpError
	if errors.As(err, &g) {
		info.Kind, info.Call = g.Kind, g.Call.Name
		info.Attempts, info.Elapsed = g.Attempts, g.Elapsed
		// The other fields carry call, attempts, elapsed, code and
		// request id: the message is the cause, not the whole chain again.
		info.Message = sources.Redact(Describe(g.Last))
	} else {
		info.Kind = Classify(Call{Safe: true}, err).Kind
	}
	var he *sources.HTTPError
	if errors.As(err, &he) {
		info.ErrorCode, info.HTTPStatus, info.RequestID = he.ErrorCode, he.StatusCode, he.RequestID
		if info.Call == "" {
			info.Call = he.Call
		}
		if he.Message != "" {
			info.Message = sources.Redact(he.Message) // the server's own words
		}
	}
	var nm *sources.NoMatchError
	if errors.As(err, &nm) && info.Call == "" {
		info.Call = nm.Call
	}
	var se *sources.ServerError
	if errors.As(err, &se) {
		info.ErrorCode = se.SQLState
		if info.Call == "" {
			info.Call = se.Call
		}
	}
	if code, ok := thriftHTTPStatus(err); ok && info.HTTPStatus == 0 {
		info.HTTPStatus = code
	}
	return info
}
