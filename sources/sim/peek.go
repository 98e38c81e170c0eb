package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxCallName bounds the method name a peek accepts; TCLIService names are
// short, anything longer is garbage.
const maxCallName = 64

// peekCallName reads the method name from the head of a TBinaryProtocol
// message (strict or old-style framing) without decoding the rest. The
// simulator needs it before processing to count the call and to choose its
// faults.
func peekCallName(b []byte) (string, error) {
	if len(b) < 4 {
		return "", errors.New("thrift message too short")
	}
	first := int32(binary.BigEndian.Uint32(b))
	var n int32
	var rest []byte
	if first < 0 { // strict: version | type, then the name
		if uint32(first)&0xffff0000 != 0x80010000 {
			return "", fmt.Errorf("bad thrift version 0x%08x", uint32(first))
		}
		if len(b) < 8 {
			return "", errors.New("thrift message too short")
		}
		n = int32(binary.BigEndian.Uint32(b[4:]))
		rest = b[8:]
	} else { // old style: the name comes first
		n = first
		rest = b[4:]
	}
	if n <= 0 || n > maxCallName {
		return "", fmt.Errorf("bad thrift method name length %d", n)
	}
	if int(n) > len(rest) {
		return "", errors.New("thrift method name truncated")
	}
	name := rest[:n]
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return "", errors.New("thrift method name is not an identifier")
		}
	}
	return string(name), nil
}
