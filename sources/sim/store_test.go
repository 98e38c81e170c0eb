package sim

import (
	"regexp"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func newTestStore() (*store, *ManualClock) {
	clk := NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	return newStore(clk, 90*time.Second, 150*time.Second, 5*time.Minute), clk
}

func state(s *store, op *operation) (model.State, bool) {
	var st model.State
	var open bool
	s.withOp(op.guid, false, func(op *operation, _ time.Time) { st, open = op.state, op.open })
	return st, open
}

func TestStateMachine(t *testing.T) {
	s, clk := newTestStore()
	ss := s.openSession("wh", "alice@example.com", "Tableau", KindExternal, true)
	op := s.execute(ss, "SELECT x", planStatement("SELECT x", 8*time.Second, 3), true, nil)
	if !uuidV4.MatchString(op.id) {
		t.Errorf("statement id %q is not a v4 UUID", op.id)
	}
	steps := []struct {
		after time.Duration
		want  model.State
	}{{0, model.StatePending}, {time.Second, model.StateRunning}, {6 * time.Second, model.StateRunning}, {time.Second, model.StateFinished}}
	for _, st := range steps {
		clk.Advance(st.after)
		if got, open := state(s, op); got != st.want || !open {
			t.Fatalf("after +%v: %s open=%v, want %s open", st.after, got, open, st.want)
		}
	}
	// Close: terminal and no longer open; truth says CLOSED.
	s.withOp(op.guid, true, func(op *operation, now time.Time) { s.closeLocked(op, now) })
	if got, open := state(s, op); got != model.StateFinished || open {
		t.Errorf("after close: %s open=%v", got, open)
	}
	if v := s.views()[0]; v.Open || v.State != model.StateFinished {
		t.Errorf("view after close: %+v", v)
	}
	st := s.stats()
	if st.Closed != 1 || st.Open != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestCancelAndInstantStatements(t *testing.T) {
	s, clk := newTestStore()
	ss := s.openSession("wh", "u", "a", KindExternal, true)
	one := s.execute(ss, "SELECT 1", planStatement("SELECT 1", time.Hour, 3), true, nil)
	if got, _ := state(s, one); got != model.StateFinished {
		t.Errorf("SELECT 1 is %s, want FINISHED at once", got)
	}
	long := s.execute(ss, "SELECT sleep(60)", planStatement("SELECT sleep(60)", 0, 0), true, nil)
	clk.Advance(2 * time.Second)
	s.withOp(long.guid, true, func(op *operation, now time.Time) { s.cancelLocked(op, now) })
	clk.Advance(time.Hour)
	if got, open := state(s, long); got != model.StateCanceled || !open {
		t.Errorf("canceled op is %s open=%v; want CANCELED and still open", got, open)
	}
	// CloseSession closes what is left open on it.
	if !s.closeSession(ss.guid, true) {
		t.Fatal("closeSession failed")
	}
	if _, open := state(s, one); open {
		t.Error("SELECT 1 still open after CloseSession")
	}
	if st := s.stats(); st.Canceled != 1 || st.Closed != 2 {
		t.Errorf("stats = %+v", st)
	}
}

// The reaper fails a live operation whose owner went quiet, and only owner
// calls (not an observer's) keep it alive; it closes leaked terminal ones
// and forgets long-closed ones.
func TestReaper(t *testing.T) {
	s, clk := newTestStore()
	ss := s.openSession("wh", "bob@example.com", "JDBC", KindAbandons, true)
	orphan := s.execute(ss, "SELECT sleep(600)", planStatement("SELECT sleep(600)", 0, 0), true, nil)
	ss2 := s.openSession("wh", "carol@example.com", "dbt", KindHealthy, true)
	kept := s.execute(ss2, "SELECT sleep(600)", planStatement("SELECT sleep(600)", 0, 0), true, nil)

	for i := 0; i < 9; i++ {
		clk.Advance(10 * time.Second)
		s.withOp(orphan.guid, false, func(*operation, time.Time) {}) // observer poll
		s.withOp(kept.guid, true, func(*operation, time.Time) {})    // owner poll
		s.reap()
	}
	st, open := state(s, orphan)
	if st != model.StateFailed || !open {
		t.Fatalf("orphan after 90s: %s open=%v, want FAILED and open", st, open)
	}
	var msg string
	s.withOp(orphan.guid, false, func(op *operation, _ time.Time) { msg = op.errMsg })
	if msg != InactivityMessage {
		t.Errorf("message %q", msg)
	}
	if st, _ := state(s, kept); st != model.StateRunning {
		t.Errorf("polled op is %s, want RUNNING", st)
	}
	if c := s.stats(); c.ReapedInactive != 1 || c.TerminalUnclosed != 1 || c.Running != 1 {
		t.Errorf("stats = %+v", c)
	}
	clk.Advance(149 * time.Second)
	s.reap()
	if _, open := state(s, orphan); !open {
		t.Fatal("closed before LeakTimeout")
	}
	clk.Advance(time.Second)
	s.reap()
	if _, open := state(s, orphan); open {
		t.Fatal("still open after LeakTimeout")
	}
	if c := s.stats(); c.ReapedUnclosed != 1 {
		t.Errorf("stats = %+v", c)
	}
	clk.Advance(5 * time.Minute)
	s.reap()
	if _, ok := s.lookupID(orphan.id); ok {
		t.Error("closed op not forgotten after the retention")
	}
	if _, ok := s.lookupID(kept.id); !ok {
		t.Error("live op was forgotten")
	}
}

func TestPlanStatement(t *testing.T) {
	for sql, want := range map[string]plan{
		"SELECT 1":                   {kind: resultInt, column: "1", value: 1, rows: 1},
		" select  42 ;":              {kind: resultInt, column: "42", value: 42, rows: 1},
		"SELECT id FROM range(1000)": {kind: resultRange, column: "id", rows: 1000},
		"select id from RANGE( 5 )":  {kind: resultRange, column: "id", rows: 5},
		"SELECT sleep(2)":            {kind: resultSleep, column: "sleep(2)", value: 2, rows: 1, runFor: 2 * time.Second},
		"SELECT * FROM t":            {kind: resultOther, column: "id", rows: 7, runFor: time.Minute},
		"SELECT 99999999999":         {kind: resultOther, column: "id", rows: 7, runFor: time.Minute},
	} {
		if got := planStatement(sql, time.Minute, 7); got != want {
			t.Errorf("planStatement(%q) = %+v, want %+v", sql, got, want)
		}
	}
}
