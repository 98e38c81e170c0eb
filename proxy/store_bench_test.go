package proxy

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/model"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// recordCase is a table a statement is recorded into: empty, holding
// 100,000 open operations, or at its cap of cleanly closed ones (every
// new operation evicts one).
type recordCase struct {
	name      string
	open, cap int
}

var recordCases = []recordCase{
	{"held=0", 0, 0},
	{"held=100000_open", 100_000, 0},
	{"held=100000_at_cap", 0, 100_000},
}

// newRecordTable builds c's table: a proxy on a stepping clock, one
// session, and what c holds. Each recorded statement then costs its own
// O(1) plus one step of ageing or eviction.
func newRecordTable(tb testing.TB, c recordCase) (*Proxy, *sqlJob) {
	o := Options{Upstream: "http://127.0.0.1:1", MaxOperations: c.open + 200_000, RetainFinished: time.Millisecond,
		CloseAbandoned: time.Hour, Clock: &stepClock{t: time.Unix(1_000_000, 0)}}
	if c.cap > 0 {
		o.MaxOperations, o.RetainFinished = c.cap, 1000*time.Hour
	}
	p, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
	running := model.StateRunning
	secret := randomSecret()
	for i := 0; i < c.open; i++ {
		p.observeReply(p.st.id.withAuth(request{call: "GetOperationStatus", opID: fmt.Sprintf("held-%d", i), secret: secret, ua: "app/1.0"}, "Bearer x"),
			tracked{}, reply{ok: true, status: ok, state: &running}, true)
	}
	j := newSQLJob(p, 1)
	j.run(c.cap)
	if st := p.Stats(); st.Operations != max(c.open, c.cap) {
		tb.Fatalf("%s: %d held", c.name, st.Operations)
	}
	return p, j
}

// BenchmarkRecordAndClose records a statement from a successful
// ExecuteStatement answer and its client's close, with the table empty,
// holding 100,000 open operations, or at its cap: the cost per statement
// (time, allocations, and steps/op: entries ageing or eviction stepped
// over) must not grow with what the proxy holds.
func BenchmarkRecordAndClose(b *testing.B) {
	for _, c := range recordCases {
		b.Run(c.name, func(b *testing.B) {
			_, j := newRecordTable(b, c)
			work0 := j.p.st.workDone()
			b.ReportAllocs()
			b.ResetTimer()
			j.run(b.N)
			b.ReportMetric(float64(j.p.st.workDone()-work0)/float64(b.N), "steps/op")
		})
	}
}

// TestMemoryPerHeldOperation reports what one held operation costs, for
// sizing --max-operations (docs/proxy.md "Deployment").
func TestMemoryPerHeldOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("sizing figure")
	}
	p, err := New(Options{Upstream: "http://127.0.0.1:1", MaxOperations: 200_000})
	if err != nil {
		t.Fatal(err)
	}
	ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
	running := model.StateRunning
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	const n = 50_000
	for i := 0; i < n; i++ {
		p.observeReply(p.st.id.withAuth(request{call: "GetOperationStatus", opID: randomStatementID(), secret: randomSecret(),
			path: "/sql/1.0/warehouses/0123456789abcdef", ua: "databricks-sql-go/1.14.0"}, "Bearer dapi0123456789abcdef0123456789abcdef"),
			tracked{}, reply{ok: true, status: ok, state: &running}, true)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	per := float64(m1.HeapAlloc-m0.HeapAlloc) / n
	t.Logf("%.0f bytes of heap per held operation (%d held)", per, p.Stats().Operations)
	if per > 8<<10 {
		t.Errorf("%.0f bytes per held operation", per)
	}
}

// Ageing keeps a session with open operations without touching its
// activity (what dbxtop counts the server's reaper from), and forgets an
// idle session with nothing open.
func TestAgeingKeepsActivity(t *testing.T) {
	s := newStore(time.Minute, 10)
	t0 := time.Unix(1_000_000, 0)
	busy := s.addSession("busy", nil, "/p", "ua", t0)
	idle := s.addSession("idle", nil, "/p", "ua", t0)
	o := s.addOp("op", nil, "/p", "ua", t0)
	o.sess = busy
	busy.open[o] = struct{}{}
	s.age(t0.Add(2 * time.Minute))
	if s.sessions["busy"] == nil || !busy.lastRPC.Equal(t0) {
		t.Errorf("busy session: kept %v, activity %v (want %v)", s.sessions["busy"] != nil, busy.lastRPC, t0)
	}
	if s.sessions["idle"] != nil || idle.open != nil {
		t.Error("the idle session with nothing open was not forgotten")
	}
}

// At the cap every new operation evicts a finished one: each is counted,
// and logged in one line a minute, not one line each.
func TestEvictionsLoggedInAggregate(t *testing.T) {
	var logs syncBuffer
	p, err := New(Options{Upstream: "http://127.0.0.1:1", MaxOperations: 100, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
	running := model.StateRunning
	const n = 5000
	for i := 0; i < n; i++ {
		rq := p.st.id.withAuth(request{call: "GetOperationStatus", opID: fmt.Sprintf("op-%d", i)}, "Bearer x")
		p.observeReply(rq, tracked{}, reply{ok: true, status: ok, state: &running}, true)
		rq.call = "CloseOperation"
		p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
	}
	if st := p.Stats(); st.Evicted < n-200 {
		t.Fatalf("evicted %d, want about %d", st.Evicted, n-100)
	}
	if lines := strings.Count(logs.String(), "\n"); lines != 1 {
		t.Errorf("%d log lines for %d evictions within a minute, want 1:\n%.500s", lines, p.Stats().Evicted, logs.String())
	}
}

// stepClock advances a second at each reading: ageing is exact, whatever
// the machine's speed.
type stepClock struct{ t time.Time }

func (c *stepClock) Now() time.Time                         { c.t = c.t.Add(time.Second); return c.t }
func (c *stepClock) After(d time.Duration) <-chan time.Time { return make(chan time.Time) }

// The cost of recording and closing a statement does not grow with what
// the table holds: allocations and the entries ageing or eviction steps
// over per statement are the same with none held, 100,000 open ones, and
// at the cap of 100,000 closed ones where every statement evicts one
// (counts, not time: BenchmarkRecordAndClose shows the time).
func TestRecordCostFlatWithHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 100,000 operations")
	}
	type cost struct{ allocs, work float64 }
	measure := func(c recordCase) cost {
		p, j := newRecordTable(t, c)
		const runs = 2000
		work0 := p.st.workDone()
		allocs := testing.AllocsPerRun(runs, func() { j.run(1) })
		return cost{allocs, float64(p.st.workDone()-work0) / float64(runs+1)}
	}
	var base cost
	for i, c := range recordCases {
		got := measure(c)
		t.Logf("%s: %.0f allocations, %.2f ageing or eviction steps per statement", c.name, got.allocs, got.work)
		if i == 0 {
			base = got
			continue
		}
		if got.allocs > base.allocs || got.work > base.work+0.01 {
			t.Errorf("cost grows with what is held: %+v with %s, %+v with none", got, c.name, base)
		}
	}
}
