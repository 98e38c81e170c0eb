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

// BenchmarkRecordAndClose records an operation from a successful answer
// and closes it, with the table already holding `held` open operations:
// the cost per RPC must not grow with what the proxy holds.
func BenchmarkRecordAndClose(b *testing.B) {
	for _, held := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			p, err := New(Options{Upstream: "http://127.0.0.1:1", MaxOperations: held + b.N + 10, RetainFinished: time.Millisecond,
				CloseAbandoned: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
			running := model.StateRunning
			secret := randomSecret()
			for i := 0; i < held; i++ {
				p.observeReply(request{call: "GetOperationStatus", opID: fmt.Sprintf("held-%d", i), secret: secret, auth: "Bearer x"},
					tracked{}, reply{ok: true, status: ok, state: &running}, true)
			}
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = fmt.Sprintf("op-%d", i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rq := request{call: "GetOperationStatus", opID: ids[i], secret: secret, auth: "Bearer x"}
				p.observeReply(rq, tracked{}, reply{ok: true, status: ok, state: &running}, true)
				rq.call = "CloseOperation"
				p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
			}
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
		p.observeReply(request{call: "GetOperationStatus", opID: randomStatementID(), secret: randomSecret(),
			path: "/sql/1.0/warehouses/0123456789abcdef", ua: "databricks-sql-go/1.14.0", auth: "Bearer dapi0123456789abcdef0123456789abcdef"},
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
		rq := request{call: "GetOperationStatus", opID: fmt.Sprintf("op-%d", i), auth: "Bearer x"}
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

// The cost of recording and closing an operation does not grow with
// what the table holds: allocations and the entries ageing steps over
// per operation are the same with 0 and 100,000 open operations held
// (counts, not time: BenchmarkRecordAndClose shows the time).
func TestRecordCostFlatWithHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 100,000 operations")
	}
	type cost struct{ allocs, work float64 }
	measure := func(held int) cost {
		p, err := New(Options{Upstream: "http://127.0.0.1:1", MaxOperations: held + 100_000, RetainFinished: time.Millisecond,
			CloseAbandoned: time.Hour, Clock: &stepClock{t: time.Unix(1_000_000, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		ok := &tc.TStatus{StatusCode: tc.TStatusCode_SUCCESS_STATUS}
		running := model.StateRunning
		secret := randomSecret()
		for i := 0; i < held; i++ {
			p.observeReply(request{call: "GetOperationStatus", opID: fmt.Sprintf("held-%d", i), secret: secret, auth: "Bearer x", ua: "app/1.0"},
				tracked{}, reply{ok: true, status: ok, state: &running}, true)
		}
		const runs = 2000
		ids := make([]string, runs+1)
		for i := range ids {
			ids[i] = fmt.Sprintf("op-%d", i)
		}
		i := 0
		work0 := p.st.workDone()
		allocs := testing.AllocsPerRun(runs, func() {
			rq := request{call: "GetOperationStatus", opID: ids[i], secret: secret, auth: "Bearer x", ua: "app/1.0"}
			i++
			p.observeReply(rq, tracked{}, reply{ok: true, status: ok, state: &running}, true)
			rq.call = "CloseOperation"
			p.observeReply(rq, tracked{}, reply{ok: true, status: ok}, true)
		})
		return cost{allocs, float64(p.st.workDone()-work0) / float64(i)}
	}
	empty, full := measure(0), measure(100_000)
	t.Logf("per operation: %.0f allocations, %.2f ageing steps (0 held); %.0f, %.2f (100,000 held)", empty.allocs, empty.work, full.allocs, full.work)
	if full.allocs > empty.allocs || full.work > empty.work+0.01 {
		t.Errorf("cost grows with what is held: %+v with 0, %+v with 100,000", empty, full)
	}
}
