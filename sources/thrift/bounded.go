package thrift

import (
	"context"
	"fmt"

	athrift "github.com/apache/thrift/lib/go/thrift"
)

// boundedProtocol guards container sizes while decoding a message that is
// wholly in memory. apache/thrift v0.23 checks a claimed size as
// size×minElemSize in int32, which overflows: a forged list length such as
// 0x80000001 passes the check as a small positive number and then panics
// in make() with a negative capacity (found by FuzzDecodeResponse). Every
// element takes at least one byte on the wire, so a count larger than the
// bytes left, or negative, is rejected here before the generated code
// allocates.
type boundedProtocol struct {
	athrift.TProtocol
	buf *athrift.TMemoryBuffer
}

// NewReadProtocol returns a TBinaryProtocol reading body, with the size
// guards above. It is the one way this package decodes a body; servers that
// run a tcliservice processor on a body they read themselves should decode
// with it too (a plain TBinaryProtocol panics on a forged length).
func NewReadProtocol(body []byte) athrift.TProtocol {
	buf := athrift.NewTMemoryBuffer()
	buf.Write(body)
	return &boundedProtocol{TProtocol: athrift.NewTBinaryProtocolConf(buf, readConf(len(body))), buf: buf}
}

func (p *boundedProtocol) check(kind string, n int) error {
	if n < 0 || n > p.buf.Len() {
		return athrift.NewTProtocolExceptionWithType(athrift.SIZE_LIMIT,
			fmt.Errorf("%s of %d elements with %d bytes left", kind, n, p.buf.Len()))
	}
	return nil
}

func (p *boundedProtocol) ReadListBegin(ctx context.Context) (athrift.TType, int, error) {
	t, n, err := p.TProtocol.ReadListBegin(ctx)
	if err == nil {
		err = p.check("list", n)
	}
	if err != nil {
		return t, 0, err
	}
	return t, n, nil
}

func (p *boundedProtocol) ReadSetBegin(ctx context.Context) (athrift.TType, int, error) {
	t, n, err := p.TProtocol.ReadSetBegin(ctx)
	if err == nil {
		err = p.check("set", n)
	}
	if err != nil {
		return t, 0, err
	}
	return t, n, nil
}

func (p *boundedProtocol) ReadMapBegin(ctx context.Context) (athrift.TType, athrift.TType, int, error) {
	k, v, n, err := p.TProtocol.ReadMapBegin(ctx)
	if err == nil {
		err = p.check("map", n)
	}
	if err != nil {
		return k, v, 0, err
	}
	return k, v, n, nil
}
