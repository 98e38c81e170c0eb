package thrift

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxCallName bounds a method name read by PeekCallName; TCLIService names
// are short and a longer one is garbage.
const maxCallName = 256

// TBinaryProtocol message header, strict form: i32 (0x8001<<16 | type),
// i32 name length, name, i32 seqid. Old (non-strict) form: i32 name length,
// name, i8 type, i32 seqid.
const (
	binaryVersionMask = 0xffff0000
	binaryVersion1    = 0x80010000
)

// ErrNotThrift is returned by PeekCallName when the body does not start
// with a TBinaryProtocol message header.
var ErrNotThrift = errors.New("not a TBinaryProtocol message")

// PeekCallName reads the RPC name ("GetOperationStatus", …) from the header
// of a TBinaryProtocol request without consuming or copying the body, so
// middleware (the simulator's fault injection, request accounting) can
// decide before the processor runs.
func PeekCallName(body []byte) (string, error) {
	if len(body) < 4 {
		return "", fmt.Errorf("%w: %d-byte body", ErrNotThrift, len(body))
	}
	first := binary.BigEndian.Uint32(body)
	var n uint32
	var rest []byte
	if first&0x80000000 != 0 {
		if first&binaryVersionMask != binaryVersion1 {
			return "", fmt.Errorf("%w: bad version 0x%08x", ErrNotThrift, first)
		}
		if len(body) < 8 {
			return "", fmt.Errorf("%w: truncated header", ErrNotThrift)
		}
		n = binary.BigEndian.Uint32(body[4:])
		rest = body[8:]
	} else {
		n = first
		rest = body[4:]
	}
	if n == 0 || n > maxCallName {
		return "", fmt.Errorf("%w: method name length %d", ErrNotThrift, n)
	}
	if uint32(len(rest)) < n {
		return "", fmt.Errorf("%w: truncated method name", ErrNotThrift)
	}
	name := rest[:n]
	for _, c := range name {
		if c < 0x21 || c > 0x7e {
			return "", fmt.Errorf("%w: non-printable method name", ErrNotThrift)
		}
	}
	return string(name), nil
}

// PeekRequestCallName reads r's body, puts an identical body back for the
// next handler, and returns the RPC name. The body is read up to
// MaxMessageSize+1 bytes; the handler rejects anything larger anyway.
func PeekRequestCallName(r *http.Request) (string, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return "", fmt.Errorf("%w: empty body", ErrNotThrift)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageSize+1))
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("read thrift request body: %w", err)
	}
	return PeekCallName(body)
}
