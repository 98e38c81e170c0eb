package sim

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// resultKind says what rows a statement returns.
type resultKind int

const (
	resultInt   resultKind = iota // SELECT <int>: one INT column, one row
	resultRange                   // SELECT id FROM range(N): BIGINT id 0..N-1
	resultSleep                   // SELECT sleep(S): one row after S seconds
	resultOther                   // anything else: a few BIGINT rows after a workload-chosen time
)

// plan is what the simulator will do with a statement.
type plan struct {
	kind    resultKind
	column  string
	value   int64 // resultInt / resultSleep value
	rows    int64 // row count
	runFor  time.Duration
	failMsg string // non-empty: the statement fails with this message at the end
}

var (
	reInt   = regexp.MustCompile(`(?is)^\s*select\s+(-?\d{1,18})\s*;?\s*$`)
	reRange = regexp.MustCompile(`(?is)^\s*select\s+id\s+from\s+range\s*\(\s*(\d{1,12})\s*\)\s*;?\s*$`)
	reSleep = regexp.MustCompile(`(?is)^\s*select\s+sleep\s*\(\s*(\d+(?:\.\d+)?)\s*\)\s*;?\s*$`)
)

// maxRangeRows bounds range(N) so one statement cannot eat the machine.
const maxRangeRows = 10_000_000

// planStatement recognises the statements with defined results; any other
// text runs for defaultRun and returns defaultRows rows.
func planStatement(sql string, defaultRun time.Duration, defaultRows int64) plan {
	if m := reInt.FindStringSubmatch(sql); m != nil {
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil && v >= -1<<31 && v < 1<<31 {
			return plan{kind: resultInt, column: m[1], value: v, rows: 1}
		}
	}
	if m := reRange.FindStringSubmatch(sql); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil && n <= maxRangeRows {
			return plan{kind: resultRange, column: "id", rows: n}
		}
	}
	if m := reSleep.FindStringSubmatch(sql); m != nil {
		s, err := strconv.ParseFloat(m[1], 64)
		if err == nil && s <= 7*24*3600 {
			return plan{kind: resultSleep, column: "sleep(" + m[1] + ")", value: int64(s),
				rows: 1, runFor: time.Duration(s * float64(time.Second))}
		}
	}
	return plan{kind: resultOther, column: "id", rows: defaultRows, runFor: defaultRun}
}

// statementType is the Query History statement_type of a SQL text.
func statementType(sql string) string {
	f := strings.Fields(strings.ToUpper(sql))
	if len(f) == 0 {
		return "OTHER"
	}
	switch f[0] {
	case "SELECT", "WITH":
		return "SELECT"
	case "INSERT", "MERGE", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "OPTIMIZE",
		"COPY", "DESCRIBE", "SHOW", "SET", "USE", "TRUNCATE", "REFRESH", "ANALYZE", "EXPLAIN":
		return f[0]
	}
	return "OTHER"
}
