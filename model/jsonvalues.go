package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// jsonNull is the literal encoding/json hands to UnmarshalJSON for null.
var jsonNull = []byte("null")

// jsonTime is a time in the snapshot JSON form: RFC 3339 in UTC with fractional
// seconds only when present, or null for the zero (unknown) time.
type jsonTime struct{ time.Time }

func (t jsonTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return jsonNull, nil
	}
	return strconv.AppendQuote(nil, t.UTC().Format(time.RFC3339Nano)), nil
}

func (t *jsonTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, jsonNull) {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("time must be an RFC 3339 string or null: %w", err)
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("time %q is not RFC 3339: %w", s, err)
	}
	v = v.UTC()
	// A UTC offset can push year 0000 or 9999 out of what RFC 3339 can
	// print; refuse rather than re-encode something unparseable.
	if y := v.Year(); y < 0 || y > 9999 {
		return fmt.Errorf("time %q is out of range in UTC", s)
	}
	t.Time = v
	return nil
}

// jsonSeconds is a duration as seconds, printed exactly (to the
// nanosecond, trailing zeros trimmed) so that decoding and re-encoding are
// lossless; null when unknown.
type jsonSeconds struct {
	D     time.Duration
	Known bool
}

func secondsOf(d *time.Duration) jsonSeconds {
	if d == nil {
		return jsonSeconds{}
	}
	return jsonSeconds{D: *d, Known: true}
}

func (s jsonSeconds) ptr() *time.Duration {
	if !s.Known {
		return nil
	}
	d := s.D
	return &d
}

func (s jsonSeconds) MarshalJSON() ([]byte, error) {
	if !s.Known {
		return jsonNull, nil
	}
	return []byte(formatSeconds(s.D)), nil
}

func (s *jsonSeconds) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, jsonNull) {
		*s = jsonSeconds{}
		return nil
	}
	d, err := parseSeconds(string(b))
	if err != nil {
		return err
	}
	*s = jsonSeconds{D: d, Known: true}
	return nil
}

func formatSeconds(d time.Duration) string {
	neg := d < 0
	u := uint64(d)
	if neg {
		u = uint64(-(d + 1)) + 1 // math.MinInt64 has no positive twin
	}
	sec, ns := u/1e9, u%1e9
	s := strconv.FormatUint(sec, 10)
	if ns != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// parseSeconds reads a JSON number of seconds exactly (no float rounding),
// rounding to the nearest nanosecond.
func parseSeconds(s string) (time.Duration, error) {
	if !json.Valid([]byte(s)) || s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, fmt.Errorf("duration must be a number of seconds or null, not %s", truncate(s, 40))
	}
	// Refuse huge exponents before big.Rat tries to expand them.
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || exp > 30 || exp < -30 {
			return 0, fmt.Errorf("duration %s is out of range", truncate(s, 40))
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("duration %s is not a number", truncate(s, 40))
	}
	r.Mul(r, big.NewRat(1e9, 1))
	// Round half away from zero.
	num, den := r.Num(), r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2)).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(int64(num.Sign())))
	}
	if !q.IsInt64() {
		return 0, fmt.Errorf("duration %s is out of range", truncate(s, 40))
	}
	return time.Duration(q.Int64()), nil
}

// errorInfoWire is ErrorInfo's snapshot JSON error object.
type errorInfoWire struct {
	Kind       ErrorKind   `json:"kind"`
	Call       string      `json:"call"`
	ErrorCode  string      `json:"error_code"`
	HTTPStatus int         `json:"http_status"`
	Message    string      `json:"message"`
	RequestID  string      `json:"request_id"`
	Attempts   int         `json:"attempts"`
	ElapsedS   jsonSeconds `json:"elapsed_s"`
	Seen       int         `json:"seen,omitempty"` // addition: see ErrorInfo.Seen
	Workspace  string      `json:"workspace,omitempty"`
}

// MarshalJSON encodes the snapshot JSON error object, with elapsed_s in seconds.
func (e ErrorInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(errorInfoWire{
		Kind: e.Kind, Call: e.Call, ErrorCode: e.ErrorCode, HTTPStatus: e.HTTPStatus,
		Message: e.Message, RequestID: e.RequestID, Attempts: e.Attempts,
		ElapsedS: jsonSeconds{D: e.Elapsed, Known: true}, Seen: e.Seen, Workspace: e.Workspace,
	})
}

// UnmarshalJSON decodes the snapshot JSON error object. A decoded error
// is another process's (a serve, a proxy, a file): its text is cleaned
// here, field by field.
func (e *ErrorInfo) UnmarshalJSON(b []byte) error {
	var w errorInfoWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = sanitizeErrorValue(ErrorInfo{
		Kind: w.Kind, Call: w.Call, ErrorCode: w.ErrorCode, HTTPStatus: w.HTTPStatus,
		Message: w.Message, RequestID: w.RequestID, Attempts: w.Attempts, Elapsed: w.ElapsedS.D, Seen: w.Seen,
		Workspace: w.Workspace,
	})
	return nil
}
