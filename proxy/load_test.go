package proxy

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/sources/thrift"
)

// selectOneLoad runs `clients` clients of SELECT 1 (execute, status,
// fetch, close) against host until ctx ends, counting statements.
func selectOneLoad(ctx context.Context, t testing.TB, host, token, wh string, clients int, done *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		c, err := thrift.NewClient(thrift.Options{Host: host, Token: token, UserAgent: "load/1.0", Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		sess, err := c.OpenSession(ctx, wh)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.CloseIdleConnections()
			for ctx.Err() == nil {
				op, err := c.Execute(ctx, sess, "SELECT 1", false)
				if err != nil {
					continue
				}
				if _, err := c.GetOperationStatus(ctx, op.Ref); err != nil {
					continue
				}
				if _, err := c.FetchResults(ctx, op.Ref, 1000); err != nil {
					continue
				}
				if c.CloseOperation(ctx, op.Ref) == nil {
					done.Add(1)
				}
			}
			_ = c.CloseSession(context.Background(), sess)
		}()
	}
	return &wg
}

func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// loadRate is what one measurement window saw: statements per second of
// wall-clock time, and per CPU-second of this process (0 when the CPU
// time is unknown): the cost of a statement, less bent by neighbours.
type loadRate struct{ wall, cpu float64 }

func measureRate(done *atomic.Int64, d time.Duration) loadRate {
	a, t0 := done.Load(), time.Now()
	c0, ok0 := cpuTime()
	time.Sleep(d)
	n := float64(done.Load() - a)
	c1, ok1 := cpuTime()
	r := loadRate{wall: n / time.Since(t0).Seconds()}
	if ok0 && ok1 && c1 > c0 {
		r.cpu = n / (c1 - c0).Seconds()
	}
	return r
}

// Sustained load with a short --retain-finished: the operations the proxy
// holds and the process's heap stay flat once the first retention
// window has passed (the store ages out in order; nothing scans or sorts
// per RPC; the in-process simulator forgets closed operations on the same
// retention and holds at most a fixed number); on a soak run, the
// throughput at the end holds up against its own start. A short run by
// default (CI); DBXTOP_PROXY_SOAK=3m runs the full length.
func TestSustainedLoadStaysFlat(t *testing.T) {
	total, retain := 12*time.Second, 2*time.Second
	if d, err := time.ParseDuration(os.Getenv("DBXTOP_PROXY_SOAK")); err == nil && d > total {
		total, retain = d, 30*time.Second
	}
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioQuiet, Seed: 7, Retention: retain})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	p := startProxy(t, s.URL(), Options{Heal: true, RetainFinished: retain, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), total)
	defer cancel()
	var done atomic.Int64
	host := p.URL()
	if os.Getenv("DBXTOP_PROXY_LOAD_DIRECT") != "" {
		host = s.URL()
	}
	wg := selectOneLoad(ctx, t, host, s.Token(), s.WarehouseIDs()[0], 4, &done)
	window := total / 4
	time.Sleep(window / 4)
	start := measureRate(&done, window/2)
	// Past the first retention window: held operations and heap from here on.
	time.Sleep(max(0, retain+window/4-window/2))
	held1, heap1 := p.Stats().Operations, heapMB()
	time.Sleep(time.Until(deadlineOf(ctx)) - window/2 - 200*time.Millisecond)
	end := measureRate(&done, window/2)
	held2, heap2 := p.Stats().Operations, heapMB()
	cancel()
	wg.Wait()
	via := "through the proxy"
	if host == s.URL() {
		via = "direct"
	}
	t.Logf("%s, 4 clients of SELECT 1 for %s, --retain-finished %s: %.0f statements/s at the start, %.0f at the end (%.2fx); %.0f then %.0f per CPU-second (%.2fx); held %d then %d operations; heap %.1f then %.1f MB; %d statements",
		via, total, retain, start.wall, end.wall, end.wall/start.wall, start.cpu, end.cpu, end.cpu/start.cpu,
		held1, held2, heap1, heap2, done.Load())
	if done.Load() == 0 {
		t.Fatal("no statement completed through the proxy")
	}
	// The collapse this guards against (a scan and a sort of every held
	// operation per RPC) makes each statement cost more as the run goes
	// on. Neither rate is asserted in the short run: per second of wall
	// clock it swings with the neighbours (CI runs packages in parallel on
	// two shared cores, and under -race), and per CPU-second of this
	// process it still moved far more than 10 % between identical short
	// runs on a loaded machine (contention changes what a statement costs
	// in CPU too). Both are logged; a soak run, on a machine at rest,
	// judges the wall-clock rate. The short run still catches the collapse
	// without a clock: held operations stay what retention explains.
	if soak := os.Getenv("DBXTOP_PROXY_SOAK") != ""; soak && (start.wall == 0 || end.wall < 0.9*start.wall) {
		t.Errorf("throughput fell from %.0f to %.0f statements/s", start.wall, end.wall)
	}
	// Held operations are what retention explains (rate × window), not
	// everything run: finished ones age out in order.
	if bound := 2*max(start.wall, end.wall)*retain.Seconds() + 200; float64(held2) > bound || held2 >= int(done.Load()) {
		t.Errorf("held %d operations at the end (%d at the first window), more than retention explains (%.0f)", held2, held1, bound)
	}
	// The whole process: proxy, simulator and clients. Both forget what
	// they ran after the retention window, so past it the heap is flat.
	if heap2 > 1.5*heap1+16 {
		t.Errorf("heap grew from %.1f to %.1f MB", heap1, heap2)
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// A shortened soak at the cap (CI): at the default --retain-finished a
// steady job fills the table, and from then on every new operation
// evicts one. The table reaches its cap and stays there, the log stays
// one eviction line a minute (bounded bytes, however many evictions),
// and the work per statement — allocations of the whole process and the
// store's ageing or eviction steps: counts, not time — is no more at the
// cap, early or late, than while the table was filling.
func TestAtTheCapCostStaysFlat(t *testing.T) {
	const capOps = 200
	s, err := sim.Start(context.Background(), sim.Options{Scenario: sim.ScenarioQuiet, Seed: 7, Retention: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	var logs syncBuffer
	p := startProxy(t, s.URL(), Options{Heal: true, MaxOperations: capOps, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var done atomic.Int64
	wg := selectOneLoad(ctx, t, p.URL(), s.Token(), s.WarehouseIDs()[0], 4, &done)
	defer func() { cancel(); wg.Wait() }()
	await := func(what string, cond func(Stats) bool) {
		for !cond(p.Stats()) {
			if ctx.Err() != nil {
				t.Fatalf("%s: not reached after %d statements (%+v)", what, done.Load(), p.Stats())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	type mark struct {
		statements, mallocs, work int64
	}
	read := func() mark {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return mark{done.Load(), int64(m.Mallocs), p.st.workDone()}
	}
	per := func(a, b mark) (allocs, work float64) {
		n := float64(b.statements - a.statements)
		return float64(b.mallocs-a.mallocs) / n, float64(b.work-a.work) / n
	}
	await("a first statement", func(Stats) bool { return done.Load() > 20 })
	m0 := read()
	await("the table nearly full", func(st Stats) bool { return st.Operations >= capOps*9/10 })
	m1 := read()
	await("the cap", func(st Stats) bool { return st.Evicted >= capOps })
	m2 := read()
	await("twice the cap evicted", func(st Stats) bool { return st.Evicted >= 3*capOps })
	m3 := read()
	await("four times the cap evicted", func(st Stats) bool { return st.Evicted >= 5*capOps })
	m4 := read()
	filling, fillingWork := per(m0, m1)
	early, earlyWork := per(m2, m3)
	late, lateWork := per(m3, m4)
	st := p.Stats()
	logBytes := len(logs.String())
	t.Logf("cap %d: %.0f allocations per statement while filling, %.0f then %.0f at the cap (whole process); %.2f, %.2f then %.2f ageing or eviction steps; %d evicted, %d statements, log %d bytes (%.2f per eviction)",
		capOps, filling, early, late, fillingWork, earlyWork, lateWork, st.Evicted, done.Load(), logBytes, float64(logBytes)/float64(st.Evicted))
	if st.Operations != capOps {
		t.Errorf("held %d operations, want the cap %d", st.Operations, capOps)
	}
	if early > 1.25*filling || late > 1.25*filling {
		t.Errorf("allocations per statement grew at the cap: %.0f while filling, %.0f then %.0f at the cap", filling, early, late)
	}
	if lateWork > earlyWork+0.5 || lateWork > 2 {
		t.Errorf("ageing or eviction steps per statement %.2f then %.2f: more than the one eviction each", earlyWork, lateWork)
	}
	// One aggregated line a minute (the run takes less than three), each
	// under 512 bytes, whatever the evictions.
	if n := strings.Count(logs.String(), "\n"); n > 3 || logBytes > 3*512 {
		t.Errorf("%d log lines, %d bytes for %d evictions, want at most 3 lines:\n%.800s", n, logBytes, st.Evicted, logs.String())
	}
}
