package proxy

import (
	"context"

	athrift "github.com/apache/thrift/lib/go/thrift"

	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// metadataCalls return an operation handle like ExecuteStatement; the
// project's IDL does not carry them, but each has the same shape: the
// request's req struct starts with the session handle (field 1), and the
// answer's success struct with the status (1) and the operation handle
// (2). They are read by that shape, field by field, skipping the rest.
var metadataCalls = map[string]bool{
	"GetTypeInfo": true, "GetCatalogs": true, "GetSchemas": true, "GetTables": true, "GetTableTypes": true,
	"GetColumns": true, "GetFunctions": true, "GetPrimaryKeys": true, "GetCrossReference": true,
}

// readFields reads a struct, calling f for each field; f returns false
// to have the field skipped.
func readFields(ctx context.Context, p athrift.TProtocol, f func(id int16, typ athrift.TType) (bool, error)) error {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return err
	}
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return err
		}
		if typ == athrift.STOP {
			break
		}
		read, err := f(id, typ)
		if err != nil {
			return err
		}
		if !read {
			if err := athrift.SkipDefaultDepth(ctx, p, typ); err != nil {
				return err
			}
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return err
		}
	}
	return p.ReadStructEnd(ctx)
}

// metadataSession reads the session handle of a metadata call's
// arguments (after the message header).
func metadataSession(ctx context.Context, p athrift.TProtocol) (*tc.TSessionHandle, error) {
	var h *tc.TSessionHandle
	err := readFields(ctx, p, func(id int16, typ athrift.TType) (bool, error) {
		if id != 1 || typ != athrift.STRUCT {
			return false, nil
		}
		return true, readFields(ctx, p, func(id int16, typ athrift.TType) (bool, error) {
			if id != 1 || typ != athrift.STRUCT {
				return false, nil
			}
			h = &tc.TSessionHandle{}
			return true, h.Read(ctx, p)
		})
	})
	return h, err
}

// metadataResult reads the status and operation handle of a metadata
// call's answer (after the message header). Fields cut off by a prefix
// are simply not learned.
func metadataResult(ctx context.Context, p athrift.TProtocol) (*tc.TStatus, *tc.TOperationHandle) {
	var st *tc.TStatus
	var h *tc.TOperationHandle
	_ = readFields(ctx, p, func(id int16, typ athrift.TType) (bool, error) {
		if id != 0 || typ != athrift.STRUCT {
			return false, nil
		}
		return true, readFields(ctx, p, func(id int16, typ athrift.TType) (bool, error) {
			switch {
			case id == 1 && typ == athrift.STRUCT:
				s := &tc.TStatus{}
				if err := s.Read(ctx, p); err != nil {
					return true, err
				}
				st = s
				return true, nil
			case id == 2 && typ == athrift.STRUCT:
				o := &tc.TOperationHandle{}
				if err := o.Read(ctx, p); err != nil {
					return true, err
				}
				h = o
				return true, nil
			}
			return false, nil
		})
	})
	return st, h
}
