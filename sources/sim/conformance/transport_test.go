package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/apache/thrift/lib/go/thrift"
)

// guardTransport sits under databricks-sql-go (via dbsql.WithTransport,
// the driver's own hook) and does two things:
//
//   - it refuses every request that is not for the simulator, so the
//     driver's telemetry feature-flag probe (hard-wired to
//     https://HOST:443) never leaves for another port;
//   - optionally it removes getDirectResults (field 1281) from
//     ExecuteStatement requests. v1.14.0 has no option to stop asking for
//     direct results, and a faithful server must serve both paths: the
//     stripped request is exactly what the driver sends to a server older
//     than SPARK_CLI_SERVICE_PROTOCOL_V1.
//
// The driver itself stays unmodified: this is the wire between it and the
// server, like a proxy.
type guardTransport struct {
	base               *http.Transport
	simHost            string // host:port of the simulator
	stripDirectResults bool
	refused            atomic.Int64 // requests for any other host
	stripped           atomic.Int64 // ExecuteStatement requests rewritten

	mu     sync.Mutex
	bodies map[*trackedBody]struct{} // response bodies not yet closed
}

// trackedBody lets the guard close what the driver leaves open: the Thrift
// HTTP client keeps each session's last response body unclosed, which pins
// its connection (and two goroutines) until the driver's 900 s timeout.
type trackedBody struct {
	io.ReadCloser
	g    *guardTransport
	once sync.Once
}

func (b *trackedBody) Close() error {
	b.once.Do(func() {
		b.g.mu.Lock()
		delete(b.g.bodies, b)
		b.g.mu.Unlock()
	})
	return b.ReadCloser.Close()
}

func newGuardTransport(simHost string, strip bool) *guardTransport {
	return &guardTransport{
		base:               &http.Transport{MaxIdleConnsPerHost: 64},
		simHost:            simHost,
		stripDirectResults: strip,
	}
}

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != g.simHost {
		g.refused.Add(1)
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("conformance guard: refusing request to %s (only the simulator at %s is reachable)", req.URL.Host, g.simHost)
	}
	if g.stripDirectResults && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		out, changed, err := stripDirectResults(body)
		if err != nil {
			return nil, fmt.Errorf("conformance guard: rewrite request: %w", err)
		}
		if changed {
			g.stripped.Add(1)
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(out))
		req.ContentLength = int64(len(out))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	tb := &trackedBody{ReadCloser: resp.Body, g: g}
	g.mu.Lock()
	if g.bodies == nil {
		g.bodies = map[*trackedBody]struct{}{}
	}
	g.bodies[tb] = struct{}{}
	g.mu.Unlock()
	resp.Body = tb
	return resp, nil
}

// CloseIdleConnections also closes the response bodies the driver left
// open (after db.Close nothing will read them) and reports how many.
func (g *guardTransport) CloseIdleConnections() { g.closeAll() }

func (g *guardTransport) closeAll() int {
	g.mu.Lock()
	open := make([]*trackedBody, 0, len(g.bodies))
	for b := range g.bodies {
		open = append(open, b)
	}
	g.mu.Unlock()
	for _, b := range open {
		b.Close()
	}
	g.base.CloseIdleConnections()
	return len(open)
}

// maxThriftDepth bounds recursion on hostile or corrupt input.
const maxThriftDepth = 32

// stripDirectResults re-encodes a TBinaryProtocol ExecuteStatement call
// without TExecuteStatementReq field 1281 (getDirectResults). Any other
// message is returned unchanged. It never panics on malformed input; it
// returns an error instead.
func stripDirectResults(body []byte) (out []byte, changed bool, err error) {
	ctx := context.Background()
	conf := &thrift.TConfiguration{}
	inBuf := thrift.NewTMemoryBufferLen(len(body))
	inBuf.Write(body)
	in := thrift.NewTBinaryProtocolConf(inBuf, conf)
	name, typ, seq, err := in.ReadMessageBegin(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("message header: %w", err)
	}
	if name != "ExecuteStatement" || typ != thrift.CALL {
		return body, false, nil
	}
	outBuf := thrift.NewTMemoryBufferLen(len(body))
	o := thrift.NewTBinaryProtocolConf(outBuf, conf)
	if err := o.WriteMessageBegin(ctx, name, typ, seq); err != nil {
		return nil, false, err
	}
	// args struct: field 1 is the TExecuteStatementReq.
	changed, err = copyStruct(ctx, in, o, 0, func(depth int, id int16) bool {
		return depth == 1 && id == 1281
	})
	if err != nil {
		return nil, false, err
	}
	if err := in.ReadMessageEnd(ctx); err != nil {
		return nil, false, err
	}
	if err := o.WriteMessageEnd(ctx); err != nil {
		return nil, false, err
	}
	if err := o.Flush(ctx); err != nil {
		return nil, false, err
	}
	return outBuf.Bytes(), changed, nil
}

// copyStruct copies one struct, dropping the fields drop selects. depth 0
// is the args struct, 1 the request inside it.
func copyStruct(ctx context.Context, in, o thrift.TProtocol, depth int, drop func(depth int, id int16) bool) (bool, error) {
	if depth > maxThriftDepth {
		return false, errors.New("nesting too deep")
	}
	name, err := in.ReadStructBegin(ctx)
	if err != nil {
		return false, err
	}
	if err := o.WriteStructBegin(ctx, name); err != nil {
		return false, err
	}
	changed := false
	for {
		fname, ftyp, id, err := in.ReadFieldBegin(ctx)
		if err != nil {
			return false, err
		}
		if ftyp == thrift.STOP {
			break
		}
		if drop(depth, id) {
			if err := thrift.Skip(ctx, in, ftyp, maxThriftDepth); err != nil {
				return false, err
			}
			changed = true
		} else {
			if err := o.WriteFieldBegin(ctx, fname, ftyp, id); err != nil {
				return false, err
			}
			c, err := copyValue(ctx, in, o, ftyp, depth+1, drop)
			if err != nil {
				return false, err
			}
			changed = changed || c
			if err := o.WriteFieldEnd(ctx); err != nil {
				return false, err
			}
		}
		if err := in.ReadFieldEnd(ctx); err != nil {
			return false, err
		}
	}
	if err := in.ReadStructEnd(ctx); err != nil {
		return false, err
	}
	if err := o.WriteFieldStop(ctx); err != nil {
		return false, err
	}
	return changed, o.WriteStructEnd(ctx)
}

func copyValue(ctx context.Context, in, o thrift.TProtocol, typ thrift.TType, depth int, drop func(int, int16) bool) (bool, error) {
	if depth > maxThriftDepth {
		return false, errors.New("nesting too deep")
	}
	switch typ {
	case thrift.BOOL:
		v, err := in.ReadBool(ctx)
		if err != nil {
			return false, err
		}
		return false, o.WriteBool(ctx, v)
	case thrift.BYTE:
		v, err := in.ReadByte(ctx)
		if err != nil {
			return false, err
		}
		return false, o.WriteByte(ctx, v)
	case thrift.I16:
		v, err := in.ReadI16(ctx)
		if err != nil {
			return false, err
		}
		return false, o.WriteI16(ctx, v)
	case thrift.I32:
		v, err := in.ReadI32(ctx)
		if err != nil {
			return false, err
		}
		return false, o.WriteI32(ctx, v)
	case thrift.I64:
		v, err := in.ReadI64(ctx)
		if err != nil {
			return false, err
		}
		return false, o.WriteI64(ctx, v)
	case thrift.DOUBLE:
		v, err := in.ReadDouble(ctx)
		if err != nil {
			return false, err
		}
		return false, o.WriteDouble(ctx, v)
	case thrift.STRING:
		v, err := in.ReadBinary(ctx)
		if err != nil {
			return false, err
		}
		return false, o.WriteBinary(ctx, v)
	case thrift.STRUCT:
		return copyStruct(ctx, in, o, depth, drop)
	case thrift.LIST, thrift.SET:
		var et thrift.TType
		var n int
		var err error
		if typ == thrift.LIST {
			et, n, err = in.ReadListBegin(ctx)
		} else {
			et, n, err = in.ReadSetBegin(ctx)
		}
		if err != nil {
			return false, err
		}
		if typ == thrift.LIST {
			err = o.WriteListBegin(ctx, et, n)
		} else {
			err = o.WriteSetBegin(ctx, et, n)
		}
		if err != nil {
			return false, err
		}
		for i := 0; i < n; i++ {
			// Elements are never the request struct: depth past 1.
			if _, err := copyValue(ctx, in, o, et, depth+1, drop); err != nil {
				return false, err
			}
		}
		if typ == thrift.LIST {
			if err := in.ReadListEnd(ctx); err != nil {
				return false, err
			}
			return false, o.WriteListEnd(ctx)
		}
		if err := in.ReadSetEnd(ctx); err != nil {
			return false, err
		}
		return false, o.WriteSetEnd(ctx)
	case thrift.MAP:
		kt, vt, n, err := in.ReadMapBegin(ctx)
		if err != nil {
			return false, err
		}
		if err := o.WriteMapBegin(ctx, kt, vt, n); err != nil {
			return false, err
		}
		for i := 0; i < n; i++ {
			if _, err := copyValue(ctx, in, o, kt, depth+1, drop); err != nil {
				return false, err
			}
			if _, err := copyValue(ctx, in, o, vt, depth+1, drop); err != nil {
				return false, err
			}
		}
		if err := in.ReadMapEnd(ctx); err != nil {
			return false, err
		}
		return false, o.WriteMapEnd(ctx)
	default:
		return false, fmt.Errorf("unknown thrift type %d", typ)
	}
}
