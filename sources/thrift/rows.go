package thrift

import (
	"fmt"

	"github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// Column describes one result column.
type Column struct {
	Name     string
	Type     tcliservice.TTypeId // the primitive type; STRING_TYPE when the server sent a complex one
	Position int32               // 1-based, as the server numbers it
}

// Page is one FetchResults answer decoded from column-based rows.
type Page struct {
	// StartRowOffset is the row number of Rows[0] in the whole result.
	StartRowOffset int64
	// Rows holds the values row by row; a NULL is nil. Values are bool,
	// int8, int16, int32, int64, float64, string or []byte by column type.
	Rows [][]any
	// HasMoreRows is false when this page ends the result (an absent flag
	// also ends it, as drivers read it).
	HasMoreRows bool
	// Columns is set when the server included the metadata.
	Columns []Column
}

// decodeSchema converts a TTableSchema.
func decodeSchema(s *tcliservice.TTableSchema) []Column {
	if s == nil {
		return nil
	}
	cols := make([]Column, 0, len(s.Columns))
	for _, d := range s.Columns {
		if d == nil {
			continue
		}
		c := Column{Name: d.ColumnName, Position: d.Position, Type: tcliservice.TTypeId_STRING_TYPE}
		if d.TypeDesc != nil && len(d.TypeDesc.Types) > 0 && d.TypeDesc.Types[0] != nil &&
			d.TypeDesc.Types[0].PrimitiveEntry != nil {
			c.Type = d.TypeDesc.Types[0].PrimitiveEntry.Type
		}
		cols = append(cols, c)
	}
	return cols
}

// decodeRowSet turns column-based results into rows. Row-based results
// (TRowSet.rows, from HiveServer2 protocols before V6) are decoded too;
// Arrow and CloudFetch results are refused because dbxtop never asks for
// them.
func decodeRowSet(rs *tcliservice.TRowSet) ([][]any, error) {
	if rs == nil {
		return nil, nil
	}
	if len(rs.ArrowBatches) > 0 || len(rs.ResultLinks) > 0 {
		return nil, fmt.Errorf("result set is Arrow or CloudFetch, which dbxtop does not request")
	}
	if rs.Columns == nil {
		return decodeRowBased(rs.Rows), nil
	}
	cols := make([][]any, len(rs.Columns))
	n := -1
	for i, c := range rs.Columns {
		vals, err := columnValues(c)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i+1, err)
		}
		if n >= 0 && len(vals) != n {
			return nil, fmt.Errorf("column %d has %d values, column 1 has %d", i+1, len(vals), n)
		}
		n = len(vals)
		cols[i] = vals
	}
	if n <= 0 {
		return nil, nil
	}
	rows := make([][]any, n)
	for r := range rows {
		row := make([]any, len(cols))
		for c := range cols {
			row[c] = cols[c][r]
		}
		rows[r] = row
	}
	return rows, nil
}

// isNull reads bit i of a column's null bitmap, least-significant bit
// first; a short or empty bitmap means "not null".
func isNull(nulls []byte, i int) bool {
	return i/8 < len(nulls) && nulls[i/8]&(1<<(i%8)) != 0
}

func typed[T any](values []T, nulls []byte) []any {
	out := make([]any, len(values))
	for i, v := range values {
		if !isNull(nulls, i) {
			out[i] = v
		}
	}
	return out
}

func columnValues(c *tcliservice.TColumn) ([]any, error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("nil column")
	case c.BoolVal != nil:
		return typed(c.BoolVal.Values, c.BoolVal.Nulls), nil
	case c.ByteVal != nil:
		return typed(c.ByteVal.Values, c.ByteVal.Nulls), nil
	case c.I16Val != nil:
		return typed(c.I16Val.Values, c.I16Val.Nulls), nil
	case c.I32Val != nil:
		return typed(c.I32Val.Values, c.I32Val.Nulls), nil
	case c.I64Val != nil:
		return typed(c.I64Val.Values, c.I64Val.Nulls), nil
	case c.DoubleVal != nil:
		return typed(c.DoubleVal.Values, c.DoubleVal.Nulls), nil
	case c.StringVal != nil:
		return typed(c.StringVal.Values, c.StringVal.Nulls), nil
	case c.BinaryVal != nil:
		return typed(c.BinaryVal.Values, c.BinaryVal.Nulls), nil
	}
	return nil, fmt.Errorf("column of a type this IDL does not know")
}

func decodeRowBased(rows []*tcliservice.TRow) [][]any {
	if len(rows) == 0 {
		return nil
	}
	out := make([][]any, 0, len(rows))
	for _, r := range rows {
		if r == nil {
			continue
		}
		row := make([]any, len(r.ColVals))
		for i, v := range r.ColVals {
			row[i] = columnValue(v)
		}
		out = append(out, row)
	}
	return out
}

func columnValue(v *tcliservice.TColumnValue) any {
	switch {
	case v == nil:
	case v.BoolVal != nil && v.BoolVal.Value != nil:
		return *v.BoolVal.Value
	case v.ByteVal != nil && v.ByteVal.Value != nil:
		return *v.ByteVal.Value
	case v.I16Val != nil && v.I16Val.Value != nil:
		return *v.I16Val.Value
	case v.I32Val != nil && v.I32Val.Value != nil:
		return *v.I32Val.Value
	case v.I64Val != nil && v.I64Val.Value != nil:
		return *v.I64Val.Value
	case v.DoubleVal != nil && v.DoubleVal.Value != nil:
		return *v.DoubleVal.Value
	case v.StringVal != nil && v.StringVal.Value != nil:
		return *v.StringVal.Value
	}
	return nil
}
