package databricks

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodePageFast decodes a query-history answer into p in one pass over
// b, without reflection and without copying the answer: a string is
// allocated only for what a row keeps, and a value repeated from row to
// row (user, warehouse, application, status, a dashboard's SQL) once per
// page. It reads a strict subset of JSON and returns false for anything
// outside it (an escape, a capital or a byte outside ASCII in a key, a
// value of an unexpected type, deep nesting, a syntax error): the
// caller then decodes the answer with encoding/json, whose verdict and
// result stand, so the subset only has to be right, never complete.
// FuzzDecodeHistoryPage checks that the two agree.
//
// Nothing in p points into b (the caller's pooled buffer, reused for the
// next answer).
func decodePageFast(b []byte, p *historyPage) bool {
	d := pageDecoder{b: b, p: p}
	if !d.object(inPage, 0) {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

// pageDecoder is one answer's decoding state.
type pageDecoder struct {
	b []byte
	i int
	p *historyPage

	sawRes bool
	row    *historyRow
	// Interned values: the previous row's value of each field first (rows
	// of one page usually share them), then the page's map.
	last    [numInterned]string
	seen    map[string]string
	escaped map[string]string // escaped form → its interned text
}

// maxSkipDepth bounds nesting in skipped values; deeper answers are left
// to encoding/json (which has a limit of its own).
const maxSkipDepth = 64

func (d *pageDecoder) ws() {
	for d.i < len(d.b) && d.b[d.i] <= ' ' {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace, 0 at the end.
func (d *pageDecoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// What an object or array being read is: the page, a row, or a value
// that is skipped.
const (
	inPage = iota
	inRow
	inSkipped
)

// object reads {"key": value, …} of kind, each value by field.
func (d *pageDecoder) object(kind, depth int) bool {
	if d.peek() != '{' {
		return false
	}
	d.i++
	if d.peek() == '}' {
		d.i++
		return true
	}
	for {
		if d.peek() != '"' {
			return false
		}
		key, esc, _, ok := d.rawString()
		if !ok || esc { // an escaped key may spell a field's name
			return false
		}
		if d.peek() != ':' {
			return false
		}
		d.i++
		d.ws()
		if !d.field(kind, key, depth) {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

func (d *pageDecoder) field(kind int, key []byte, depth int) bool {
	switch kind {
	case inPage:
		return d.pageField(key)
	case inRow:
		return d.rowField(key)
	}
	return d.skip(depth + 1)
}

// rawString reads a string at d.i and returns its bytes between the
// quotes, whether it has escapes and bytes outside ASCII, and whether it
// is valid JSON (no raw control characters, only JSON's escapes).
func (d *pageDecoder) rawString() (s []byte, escaped, nonASCII, ok bool) {
	b, i := d.b, d.i+1 // after the opening quote; locals stay in registers
	start := i
	for i < len(b) {
		// Eight bytes at a time, to the first that needs a look.
		for i+8 <= len(b) {
			if m := special8(binary.LittleEndian.Uint64(b[i : i+8])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			return b[start:i], escaped, nonASCII, true
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return nil, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || hex4(b[i+2:i+6]) < 0 {
					return nil, false, false, false
				}
				i += 6
			default:
				return nil, false, false, false
			}
		case c < 0x20:
			return nil, false, false, false
		default:
			if c >= utf8.RuneSelf {
				nonASCII = true
			}
			i++
		}
	}
	return nil, false, false, false
}

// special8 marks the bytes of x (little-endian: the first byte is the
// lowest) that are a quote, a backslash, a control character or outside
// ASCII, with the classic "has a byte less than n" and "has a zero byte"
// tests. Bits above the first marked byte may be wrong (a borrow
// carries), the lowest set bit never is: it is the first such byte.
func special8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	ctl := (x - ones*0x20) &^ x & highs
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	quote := (q - ones) &^ q & highs
	back := (bs - ones) &^ bs & highs
	return ctl | quote | back | x&highs
}

// stringValue reads a string or null into a field; null leaves the field
// as it was, as encoding/json does. field >= 0 interns the value under
// that slot; -1 gives it memory of its own.
func (d *pageDecoder) stringValue(dst *string, field int) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	if d.peek() != '"' {
		return false
	}
	start := d.i
	raw, esc, nonASCII, ok := d.rawString()
	if !ok {
		return false
	}
	return d.keepString(dst, field, start, raw, esc, nonASCII)
}

// keepString is stringValue for a string rawString has read from start.
func (d *pageDecoder) keepString(dst *string, field, start int, raw []byte, esc, nonASCII bool) bool {
	valid := !nonASCII || utf8.Valid(raw)
	if esc && valid {
		if field < 0 {
			*dst = unescape(raw)
			return true
		}
		// Undone once a page for each distinct text (a dashboard's SQL,
		// "a \u003e b" as some encoders write it), found by its escaped form.
		if v, ok := d.escaped[string(raw)]; ok {
			*dst = v
			return true
		}
		v := d.intern(unescape(raw), field)
		if d.escaped == nil {
			d.escaped = make(map[string]string, 16)
		}
		d.escaped[string(raw)] = v
		*dst = v
		return true
	}
	if !valid {
		// Bytes encoding/json replaces with U+FFFD: its own decoding of
		// this one string, so the text is exactly what it gives.
		var s string
		if json.Unmarshal(d.b[start:d.i], &s) != nil {
			return false
		}
		*dst = d.intern(s, field)
		return true
	}
	*dst = d.internBytes(raw, field)
	return true
}

// unescape undoes JSON's escapes of a string that is valid UTF-8, as
// encoding/json does: \uXXXX is that code point, a surrogate pair one
// code point, and a surrogate that is not half of a pair U+FFFD. The
// caller (rawString) checked that every escape is whole.
func unescape(raw []byte) string {
	var sb strings.Builder
	sb.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			sb.WriteByte(c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r := hex4(raw[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2 = hex4(raw[i+3 : i+7])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					sb.WriteRune(dec)
					i += 6
					continue
				}
				r = utf8.RuneError
			}
			sb.WriteRune(r)
		default: // " \ /
			sb.WriteByte(raw[i])
		}
	}
	return sb.String()
}

// hex4 is the value of four hex digits, -1 when they are not.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// Interned fields' slots (pageDecoder.last).
const (
	inStatus = iota
	inText
	inUser
	inExecUser
	inWarehouse
	inEndpoint
	inApp
	inError
	numInterned
)

func (d *pageDecoder) internBytes(b []byte, field int) string {
	if len(b) == 0 {
		return ""
	}
	if field < 0 {
		return string(b)
	}
	if l := d.last[field]; l == string(b) {
		return l
	}
	if v, ok := d.seen[string(b)]; ok { // no allocation to look up
		d.last[field] = v
		return v
	}
	return d.keep(string(b), field)
}

func (d *pageDecoder) intern(s string, field int) string {
	if s == "" || field < 0 {
		return s
	}
	if l := d.last[field]; l == s {
		return l
	}
	if v, ok := d.seen[s]; ok {
		d.last[field] = v
		return v
	}
	return d.keep(s, field)
}

func (d *pageDecoder) keep(s string, field int) string {
	if d.seen == nil {
		d.seen = make(map[string]string, 64)
	}
	d.seen[s] = s
	d.last[field] = s
	return s
}

// literal reads true, false or null.
func (d *pageDecoder) literal(lit string) bool {
	if !bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
		return false
	}
	d.i += len(lit)
	return true
}

// intValue reads a number, a string or null into a flexInt with its own
// UnmarshalJSON, given the value's raw bytes as encoding/json would.
func (d *pageDecoder) intValue(dst *flexInt) bool {
	start := d.i
	switch c := d.peek(); {
	case c == '"':
		if _, _, _, ok := d.rawString(); !ok {
			return false
		}
	case c == 'n':
		if !d.literal("null") {
			return false
		}
	case c == '-' || '0' <= c && c <= '9':
		if !d.number() {
			return false
		}
	default:
		return false
	}
	return dst.UnmarshalJSON(d.b[start:d.i]) == nil
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *pageDecoder) number() bool {
	b, i := d.b, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	d.i = i
	return true
}

// skip reads any JSON value without keeping it.
func (d *pageDecoder) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch c := d.peek(); {
	case c == '"':
		_, _, _, ok := d.rawString()
		return ok
	case c == '{':
		return d.object(inSkipped, depth)
	case c == '[':
		return d.array(inSkipped, depth)
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return false
}

// array reads [value, …] of kind: rows, or a skipped value's elements.
func (d *pageDecoder) array(kind, depth int) bool {
	if d.peek() != '[' {
		return false
	}
	d.i++
	if d.peek() == ']' {
		d.i++
		return true
	}
	for {
		var ok bool
		if kind == inRow {
			ok = d.rowValue()
		} else {
			ok = d.skip(depth + 1)
		}
		if !ok {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// unknown reports whether key, which is no field's exact name, is no
// field's name at all. encoding/json also matches names ignoring case
// (and, outside ASCII, by Unicode folding): a key with a capital or a
// byte outside ASCII is left to it, so the switches of pageField and
// rowField stay the one list of names. The API's keys are lower case.
func unknown(key []byte) bool {
	for _, c := range key {
		if 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (d *pageDecoder) pageField(key []byte) bool {
	switch string(key) {
	case "has_next_page":
		switch d.peek() {
		case 't':
			d.p.HasNextPage = true
			return d.literal("true")
		case 'f':
			d.p.HasNextPage = false
			return d.literal("false")
		case 'n':
			return d.literal("null")
		}
		return false
	case "next_page_token":
		return d.stringValue(&d.p.NextPageToken, -1)
	case "res":
		if d.sawRes { // a second "res" merges into the first in encoding/json
			return false
		}
		d.sawRes = true
		if d.peek() == 'n' {
			d.p.Res = nil
			return d.literal("null")
		}
		return d.array(inRow, 0)
	}
	return unknown(key) && d.skip(0)
}

func (d *pageDecoder) rowValue() bool {
	d.p.Res = append(d.p.Res, historyRow{})
	if d.peek() == 'n' {
		return d.literal("null") // a zero row, as encoding/json leaves it
	}
	d.row = &d.p.Res[len(d.p.Res)-1]
	return d.object(inRow, 0)
}

func (d *pageDecoder) rowField(key []byte) bool {
	r := d.row
	switch string(key) {
	case "query_id":
		return d.stringValue(&r.QueryID, -1)
	case "status":
		return d.stringValue(&r.Status, inStatus)
	case "query_text":
		return d.stringValue(&r.QueryText, inText)
	case "user_name":
		return d.stringValue(&r.UserName, inUser)
	case "executed_as_user_name":
		return d.stringValue(&r.ExecutedAsUserName, inExecUser)
	case "warehouse_id":
		return d.stringValue(&r.WarehouseID, inWarehouse)
	case "endpoint_id":
		return d.stringValue(&r.EndpointID, inEndpoint)
	case "client_application":
		return d.stringValue(&r.ClientApplication, inApp)
	case "error_message":
		return d.stringValue(&r.ErrorMessage, inError)
	case "query_start_time_ms":
		return d.intValue(&r.QueryStartTimeMs)
	case "query_end_time_ms":
		return d.intValue(&r.QueryEndTimeMs)
	case "execution_end_time_ms":
		return d.intValue(&r.ExecutionEndTimeMs)
	}
	return unknown(key) && d.skip(0)
}
