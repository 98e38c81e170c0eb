package conformance

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dbxtop/dbxtop/internal/testenv"
	"github.com/dbxtop/dbxtop/sources/sim"
)

// BenchmarkProxyAnchors measures dbxtop proxy (the release binary, default
// flags) against the anchors a user could put in its place, in one
// interleaved run: direct to the simulator, Debian's nginx (startNginx),
// and plainproxy (httputil.ReverseProxy with no observation: the floor for
// a Go proxy), once with net/http's Transport and once with its lean
// same-goroutine client (plain-go-lean: what a cheaper forwarding path
// could gain). Each of the three drivers, unchanged, runs 4 clients of
// `SELECT 1` for a window through each target in turn, A B C D A B C D …;
// the proxy's CPU comes from /proc/PID/stat (nginx: master and workers)
// and is given per 1,000 statements, throughput as statements/s.
// e2e/proxybench.sh runs it and prints the table (docs/performance.md).
//
// BENCH_WINDOW (default 5s), BENCH_ROUNDS (3), BENCH_DRIVERS (all three,
// comma-separated), DBXTOP_BIN and PLAIN_PROXY_BIN (built when unset).
func BenchmarkProxyAnchors(b *testing.B) {
	window := 5 * time.Second
	if v, err := time.ParseDuration(os.Getenv("BENCH_WINDOW")); err == nil {
		window = v
	}
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	drivers := []string{"databricks-sql-go", "databricks_sql.js", "hive_driver.js"}
	if v := os.Getenv("BENCH_DRIVERS"); v != "" {
		drivers = strings.Split(v, ",")
	}
	const clients = 4
	testenv.Tool(b, "nginx")
	var modules string
	for _, d := range drivers {
		if strings.HasSuffix(d, ".js") {
			modules = nodeModules(b)
		}
	}
	dbxtopBin := binary(b, "DBXTOP_BIN", "../../..")
	plainBin := binary(b, "PLAIN_PROXY_BIN", "./plainproxy")
	s := startSim(b, "")
	for i := 0; i < b.N; i++ { // one run whatever b.N: -benchtime 1x
		for _, driver := range drivers {
			tls := driver == "databricks_sql.js" // it speaks TLS only
			var cert, key string
			if tls {
				cert, key = selfSigned(b)
			}
			targets := anchorTargets(b, s, dbxtopBin, plainBin, cert, key)
			sums := make([]anchorSum, len(targets))
			for r := 0; r < rounds; r++ {
				for j, tg := range targets {
					if tls && tg.name == "direct" {
						continue // the simulator speaks plain HTTP only
					}
					w := runWindow(b, s, modules, driver, tg, cert, clients, window)
					sums[j].add(w)
					b.Logf("ANCHOR-WINDOW driver=%s target=%s round=%d ok=%d failed=%d rate=%.0f cpu_ms=%.0f",
						driver, tg.name, r+1, w.ok, w.failed, w.rate, w.cpu.Seconds()*1000)
				}
			}
			byName := map[string]anchorSum{}
			for j, tg := range targets {
				byName[tg.name] = sums[j]
				if sums[j].windows == 0 {
					continue
				}
				cpu := "-"
				if tg.pids != nil {
					cpu = fmt.Sprintf("%.3f", sums[j].cpuPer1000())
				}
				b.Logf("ANCHOR driver=%s target=%s clients=%d windows=%d statements=%d failed=%d rate=%.0f cpu_s_per_1000=%s",
					driver, tg.name, clients, sums[j].windows, sums[j].ok, sums[j].failed, sums[j].meanRate(), cpu)
				if sums[j].failed != 0 {
					b.Errorf("%s through %s: %d statements failed: %v", driver, tg.name, sums[j].failed, sums[j].errors)
				}
			}
			d, n, pl, le := byName["dbxtop"], byName["nginx"], byName["plain-go"], byName["plain-go-lean"]
			vsDirect := "-" // no direct windows for a TLS-only driver
			if dr := byName["direct"]; dr.windows > 0 {
				vsDirect = fmt.Sprintf("%.2f", d.meanRate()/dr.meanRate())
			}
			b.Logf("ANCHOR-RATIO driver=%s cpu_dbxtop_vs_plain=%.2f cpu_dbxtop_vs_nginx=%.2f rate_dbxtop_vs_nginx=%.2f rate_dbxtop_vs_plain=%.2f rate_dbxtop_vs_direct=%s rate_plain_vs_nginx=%.2f rate_lean_vs_nginx=%.2f",
				driver, d.cpuPer1000()/pl.cpuPer1000(), d.cpuPer1000()/n.cpuPer1000(), d.meanRate()/n.meanRate(),
				d.meanRate()/pl.meanRate(), vsDirect, pl.meanRate()/n.meanRate(), le.meanRate()/n.meanRate())
		}
	}
}

// anchorTarget is one place the drivers connect to.
type anchorTarget struct {
	name string
	addr string       // host:port
	pids func() []int // the processes whose CPU is its cost; nil for direct
}

func anchorTargets(b *testing.B, s *sim.Server, dbxtopBin, plainBin, cert, key string) []anchorTarget {
	host, port := hostPort(b, s)
	direct := anchorTarget{name: "direct", addr: host + ":" + strconv.Itoa(port)}
	ng := runNginx(b, []string{s.URL()}, nginxOptions{TLSCert: cert, TLSKey: key})
	nginx := anchorTarget{name: "nginx", addr: ng.addr, pids: func() []int { return withChildren(ng.pid) }}
	tlsArgs := func() []string {
		if cert == "" {
			return nil
		}
		return []string{"--tls-cert", cert, "--tls-key", key}
	}
	plainPid, plainURL := startProc(b, plainBin, append([]string{"--upstream", s.URL()}, tlsArgs()...)...)
	plain := anchorTarget{name: "plain-go", addr: hostOf(b, plainURL), pids: func() []int { return []int{plainPid} }}
	leanPid, leanURL := startProc(b, plainBin, append([]string{"--upstream", s.URL(), "--client", "lean"}, tlsArgs()...)...)
	lean := anchorTarget{name: "plain-go-lean", addr: hostOf(b, leanURL), pids: func() []int { return []int{leanPid} }}
	dir := b.TempDir()
	dbxPid, dbxURL := startProc(b, dbxtopBin, append([]string{"proxy", "--upstream", s.URL(), "--listen", "127.0.0.1:0",
		"--admin-listen", "127.0.0.1:0", "--log-file", filepath.Join(dir, "proxy.log")}, tlsArgs()...)...)
	dbx := anchorTarget{name: "dbxtop", addr: hostOf(b, dbxURL), pids: func() []int { return []int{dbxPid} }}
	return []anchorTarget{direct, nginx, plain, lean, dbx}
}

func hostOf(b *testing.B, u string) string {
	h, p := urlHostPort(b, u)
	return h + ":" + strconv.Itoa(p)
}

// anchorWindow is one window of one driver through one target.
type anchorWindow struct {
	ok, failed int
	errors     []string
	rate       float64 // statements/s of all clients together
	cpu        time.Duration
}

type anchorSum struct {
	windows, ok, failed int
	errors              []string
	rates               float64
	cpu                 time.Duration
}

func (a *anchorSum) add(w anchorWindow) {
	a.windows++
	a.ok += w.ok
	a.failed += w.failed
	a.rates += w.rate
	a.cpu += w.cpu
	if len(a.errors) < 5 {
		a.errors = append(a.errors, w.errors...)
	}
}

func (a anchorSum) meanRate() float64 { return a.rates / float64(a.windows) }

func (a anchorSum) cpuPer1000() float64 { return a.cpu.Seconds() * 1000 / float64(a.ok) }

// runWindow runs clients of driver through tg for about window and
// returns what they did and what it cost tg's processes.
func runWindow(b *testing.B, s *sim.Server, modules, driver string, tg anchorTarget, ca string, clients int, window time.Duration) anchorWindow {
	var w anchorWindow
	var mu sync.Mutex
	var wg sync.WaitGroup
	if driver == "databricks-sql-go" {
		// Sessions are opened (one statement each) before the CPU is read:
		// the window counts statements only.
		type client struct {
			run func() (int, int, []string, time.Duration)
		}
		var cs []client
		for c := 0; c < clients; c++ {
			db := openViaAddr(b, s, tg.addr)
			db.SetMaxOpenConns(1)
			var v int64
			if err := db.QueryRow("SELECT 1").Scan(&v); err != nil {
				b.Fatalf("sql-go through %s: %v", tg.name, err)
			}
			cs = append(cs, client{run: func() (ok, failed int, errs []string, took time.Duration) {
				defer db.Close()
				t0 := time.Now()
				for time.Since(t0) < window {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					var v int64
					if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil || v != 1 {
						failed++
						if len(errs) < 5 {
							errs = append(errs, fmt.Sprint(err))
						}
					} else {
						ok++
					}
					cancel()
				}
				return ok, failed, errs, time.Since(t0)
			}})
		}
		cpu0 := cpuOf(tg)
		for _, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, failed, errs, took := c.run()
				mu.Lock()
				defer mu.Unlock()
				w.ok += ok
				w.failed += failed
				w.errors = append(w.errors, errs...)
				w.rate += float64(ok) / took.Seconds()
			}()
		}
		wg.Wait()
		w.cpu = cpuOf(tg) - cpu0
		return w
	}
	host, portS, _ := strings.Cut(tg.addr, ":")
	cpu0 := cpuOf(tg)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := runNode(b, modules, driver, "DBX_HOST="+host, "DBX_PORT="+portS,
				"DBX_PATH=/sql/1.0/warehouses/"+firstWarehouse(b, s), "DBX_TOKEN="+s.Token(), "DBX_CA="+ca,
				"DBX_SECS="+strconv.FormatFloat(window.Seconds(), 'f', -1, 64))
			mu.Lock()
			defer mu.Unlock()
			w.ok += r.OK
			w.failed += r.Failed
			w.errors = append(w.errors, r.Errors...)
			if r.MS > 0 {
				w.rate += float64(r.OK) / (float64(r.MS) / 1000)
			}
		}()
	}
	wg.Wait()
	w.cpu = cpuOf(tg) - cpu0
	return w
}

// cpuOf is the user and system CPU tg's processes have used so far.
func cpuOf(tg anchorTarget) time.Duration {
	if tg.pids == nil {
		return 0
	}
	var total time.Duration
	for _, pid := range tg.pids() {
		total += procCPU(pid)
	}
	return total
}

// procCPU reads utime+stime of pid from /proc/PID/stat (0 if gone).
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which may hold spaces: state is
	// field 3, utime 14 and stime 15.
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz
}

// withChildren is pid and its children (nginx's master and workers).
func withChildren(pid int) []int {
	out := []int{pid}
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(raw)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// binary is the program env names, or one built from pkg into a
// temporary directory.
func binary(b *testing.B, env, pkg string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	out := filepath.Join(b.TempDir(), filepath.Base(filepath.Clean(pkg)))
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = pkg
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, o)
	}
	return out
}

// startProc starts bin with args, reads listen=URL from its first line
// of stdout, and stops it (SIGTERM, then SIGKILL) when the benchmark ends.
func startProc(b *testing.B, bin string, args ...string) (pid int, listen string) {
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() { // keep draining so the process never blocks on stdout
		}
	}()
	select {
	case l := <-line:
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "listen="); ok {
				return cmd.Process.Pid, v
			}
		}
		b.Fatalf("%s: first line %q names no listen=", bin, l)
	case <-time.After(30 * time.Second):
		b.Fatalf("%s printed no first line within 30s", bin)
	}
	return 0, ""
}

// BenchmarkProxySoak runs dbxtop proxy (the release binary, default
// flags) under databricks-sql-go for BENCH_SOAK (default 10m) with
// BENCH_CLIENTS clients (default 4) of SELECT 1. Every 30 s the clients
// go 20 s through the proxy and 10 s direct to the simulator: on a shared
// machine the direct rate says what the machine gave, so the proxy's
// rate is judged as a ratio to it. It logs each period's statements/s
// through the proxy and direct, the proxy's CPU per 1,000 statements
// (/proc/PID/stat), its RSS (/proc/PID/status VmRSS) and its log's size,
// and fails when the last minute's ratio is below 0.9× the first's, its
// CPU per statement above 1/0.9× the first's, or the log passes 1 MB.
// e2e/proxybench.sh soak runs it; the CI-length check of the state at its
// cap is proxy/load_test.go.
func BenchmarkProxySoak(b *testing.B) {
	soak := 10 * time.Minute
	if v, err := time.ParseDuration(os.Getenv("BENCH_SOAK")); err == nil {
		soak = v
	}
	clients := 4
	if v, err := strconv.Atoi(os.Getenv("BENCH_CLIENTS")); err == nil && v > 0 {
		clients = v
	}
	const viaProxy, direct = 20 * time.Second, 10 * time.Second
	dbxtopBin := binary(b, "DBXTOP_BIN", "../../..")
	s := startSim(b, "")
	logPath := filepath.Join(b.TempDir(), "proxy.log")
	pid, u := startProc(b, dbxtopBin, "proxy", "--upstream", s.URL(), "--listen", "127.0.0.1:0",
		"--admin-listen", "127.0.0.1:0", "--log-file", logPath)
	logSize := func() int64 {
		fi, err := os.Stat(logPath)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	for i := 0; i < b.N; i++ {
		var phase atomic.Int32 // 0: through the proxy, 1: direct
		var ok [2]atomic.Int64
		var failed atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			dbs := [2]*sql.DB{openViaAddr(b, s, hostOf(b, u)), openViaAddr(b, s, simHostPort(b, s))}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					ph := phase.Load()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					var v int64
					if err := dbs[ph].QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil || v != 1 {
						failed.Add(1)
					} else {
						ok[ph].Add(1)
					}
					cancel()
				}
			}()
		}
		type sample struct{ rate, direct, ratio, cpuPer1000, rssMB float64 }
		var samples []sample
		t0 := time.Now()
		for time.Since(t0) < soak {
			var sm sample
			phase.Store(0)
			n0, cpu0, p0 := ok[0].Load(), procCPU(pid), time.Now()
			time.Sleep(viaProxy)
			n1, cpu1 := ok[0].Load(), procCPU(pid)
			sm.rate = float64(n1-n0) / time.Since(p0).Seconds()
			if n1 > n0 {
				sm.cpuPer1000 = (cpu1 - cpu0).Seconds() * 1000 / float64(n1-n0)
			}
			phase.Store(1)
			d0, q0 := ok[1].Load(), time.Now()
			time.Sleep(direct)
			sm.direct = float64(ok[1].Load()-d0) / time.Since(q0).Seconds()
			sm.ratio = sm.rate / sm.direct
			sm.rssMB = rssMB(pid)
			samples = append(samples, sm)
			b.Logf("SOAK t=%.0fs rate=%.0f direct=%.0f ratio=%.2f cpu_s_per_1000=%.3f rss_mb=%.1f log_bytes=%d failed=%d",
				time.Since(t0).Seconds(), sm.rate, sm.direct, sm.ratio, sm.cpuPer1000, sm.rssMB, logSize(), failed.Load())
		}
		close(stop)
		wg.Wait()
		if len(samples) < 4 {
			b.Fatalf("%d samples: give BENCH_SOAK at least 2m", len(samples))
		}
		k := len(samples)
		mean := func(a, b float64) float64 { return (a + b) / 2 }
		r0, r1 := mean(samples[0].ratio, samples[1].ratio), mean(samples[k-2].ratio, samples[k-1].ratio)
		c0, c1 := mean(samples[0].cpuPer1000, samples[1].cpuPer1000), mean(samples[k-2].cpuPer1000, samples[k-1].cpuPer1000)
		b.Logf("SOAK-END minutes=%.1f statements_via_proxy=%d failed=%d rate_first_min=%.0f rate_last_min=%.0f ratio_to_direct_first=%.2f ratio_to_direct_last=%.2f end_vs_start=%.2f cpu_first=%.3f cpu_last=%.3f cpu_end_vs_start=%.2f rss_mb_1m=%.1f rss_mb_end=%.1f log_bytes=%d",
			time.Since(t0).Minutes(), ok[0].Load(), failed.Load(), mean(samples[0].rate, samples[1].rate), mean(samples[k-2].rate, samples[k-1].rate),
			r0, r1, r1/r0, c0, c1, c1/c0, samples[1].rssMB, samples[k-1].rssMB, logSize())
		if failed.Load() != 0 {
			b.Errorf("%d statements failed", failed.Load())
		}
		if r1 < 0.9*r0 || c1 > c0/0.9 {
			b.Errorf("the proxy slowed down: ratio to direct %.2f -> %.2f, CPU %.3f -> %.3f s per 1,000", r0, r1, c0, c1)
		}
		if n := logSize(); n > 1<<20 {
			b.Errorf("the proxy's log grew to %d bytes", n)
		}
	}
}

// rssMB is pid's resident set (VmRSS) in MB, 0 if unknown.
func rssMB(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
