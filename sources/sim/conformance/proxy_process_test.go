package conformance

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dbsql "github.com/databricks/databricks-sql-go"
	"github.com/databricks/databricks-sql-go/driverctx"

	"github.com/dbxtop/dbxtop/sources/sim"
)

// proxyProcessArgs, when set, makes the test binary run `dbxtop proxy`
// with these arguments (separated by \x1f) instead of the tests
// (TestMain): a process a test can SIGTERM or kill -9, as a service
// manager or the kernel would.
const proxyProcessArgs = "DBXTOP_CONFORMANCE_PROXY_ARGS"

// proxyProcess is `dbxtop proxy` in a child process.
type proxyProcess struct {
	cmd    *exec.Cmd
	listen string // host:port
	exited chan struct{}
	stderr *proxyLog
}

// startProxyProcess runs `dbxtop proxy --upstream s.URL() args...` in a
// child process with env added, on a free loopback port unless args name
// one, and kills it (if still running) when the test ends.
func startProxyProcess(t *testing.T, s *sim.Server, env []string, args ...string) *proxyProcess {
	t.Helper()
	all := append([]string{"proxy", "--upstream", s.URL(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, args...)
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(append(os.Environ(), env...), proxyProcessArgs+"="+strings.Join(all, "\x1f"))
	pp := &proxyProcess{cmd: c, exited: make(chan struct{}), stderr: &proxyLog{}}
	c.Stderr = pp.stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Wait(); close(pp.exited) }()
	t.Cleanup(func() {
		_ = c.Process.Kill()
		<-pp.exited
		noSecret(t, s, "proxy process stderr", pp.stderr.String())
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
		}
	}()
	select {
	case l := <-first:
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "listen="); ok {
				pp.listen = hostOfURL(t, v)
			}
		}
		if pp.listen == "" {
			t.Fatalf("proxy process: first line %q names no listen=; stderr: %s", l, pp.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("proxy process printed no first line within 60s; stderr: %s", pp.stderr.String())
	}
	return pp
}

func hostOfURL(t testing.TB, u string) string {
	h, p := urlHostPort(t, u)
	return net.JoinHostPort(h, strconv.Itoa(p))
}

// waitExit waits up to within for the process to exit.
func (pp *proxyProcess) waitExit(within time.Duration) bool {
	select {
	case <-pp.exited:
		return true
	case <-time.After(within):
		return false
	}
}

// logSays waits up to within for a line of the process's log that
// contains every one of texts.
func (pp *proxyProcess) logSays(within time.Duration, texts ...string) bool {
	deadline := time.Now().Add(within)
	for {
		for _, l := range strings.Split(pp.stderr.String(), "\n") {
			all := true
			for _, x := range texts {
				all = all && strings.Contains(l, x)
			}
			if all {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openViaTLS opens databricks-sql-go over TLS to hostport, trusting the
// certificate in caFile (the proxy's own).
func openViaTLS(t testing.TB, s *sim.Server, hostport, caFile string, extra ...dbsql.ConnOption) *sql.DB {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return openSQL(t, s, hostport, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, extra...)
}

func openOps(tr truth) int {
	n := 0
	for _, o := range tr.Operations {
		if o.Open {
			n++
		}
	}
	return n
}

// The drain, as a service manager stops the proxy: three
// 40-second statements in flight, one per driver (databricks-sql-go,
// @databricks/sql and hive-driver, unchanged, all over TLS to one proxy
// process), then SIGTERM with --drain-timeout 60s. All three complete
// with their row, the proxy exits once they are done (well before the
// timeout), and nothing is left open on the server.
func TestProxySIGTERMDrainsThreeDrivers(t *testing.T) {
	t.Parallel()
	modules := nodeModules(t)
	const secs = 40
	query := "SELECT sleep(" + strconv.Itoa(secs) + ")"
	s := startSim(t, "")
	cert, key := selfSigned(t)
	pp := startProxyProcess(t, s, []string{"STATE_DIRECTORY=" + t.TempDir()},
		"--drain-timeout", "60s", "--tls-cert", cert, "--tls-key", key)
	host, portS, _ := net.SplitHostPort(pp.listen)
	results := map[string]nodeResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	drivers := []string{"databricks-sql-go", "databricks_sql.js", "hive_driver.js"}
	for _, driver := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r nodeResult
			if driver == "databricks-sql-go" {
				r = sqlGoOnce(t, openViaTLS(t, s, pp.listen, cert), query)
			} else {
				r = runNode(t, modules, driver, "DBX_HOST="+host, "DBX_PORT="+portS,
					"DBX_PATH=/sql/1.0/warehouses/"+firstWarehouse(t, s), "DBX_TOKEN="+s.Token(), "DBX_CA="+cert,
					"DBX_N=1", "DBX_SQL="+query, "DBX_TIMEOUT_MS=120000", "DBX_CLOSE_TIMEOUT_MS=10000")
			}
			mu.Lock()
			results[driver] = r
			mu.Unlock()
		}()
	}
	waitFor(t, s, 90*time.Second, "the three statements running on the server", func(tr truth) bool { return openOps(tr) >= 3 })
	term := time.Now()
	if err := pp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitedAfter := make(chan time.Duration, 1)
	go func() { <-pp.exited; exitedAfter <- time.Since(term) }()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(secs*time.Second + 2*time.Minute):
		t.Fatalf("a driver hangs after SIGTERM; results so far %+v; proxy: %s", results, pp.stderr.String())
	}
	if !pp.waitExit(60*time.Second + 30*time.Second) {
		t.Fatalf("the proxy did not exit within --drain-timeout + 30s of SIGTERM")
	}
	t.Logf("SIGTERM drain: results %+v; proxy exited %s after SIGTERM", results, (<-exitedAfter).Round(time.Millisecond))
	for _, driver := range drivers {
		r := results[driver]
		if r.OK != 1 || r.Failed != 0 {
			t.Errorf("%s through the draining proxy: %d ok, %d failed: %v", driver, r.OK, r.Failed, r.Errors)
		}
		for _, e := range r.Errors {
			if !strings.HasPrefix(e, "close:") { // a session's close may come after the proxy stopped
				t.Errorf("%s: %s", driver, e)
			}
		}
	}
	log := pp.stderr.String()
	if !strings.Contains(log, "drain") {
		t.Errorf("the proxy's log does not mention its drain: %s", log)
	}
	waitFor(t, s, 30*time.Second, "no statement open on the server", func(tr truth) bool { return openOps(tr) == 0 })
}

// A crash with closes queued, at the default --act-as client: the
// driver's close fails (the server answers 503 to every CloseOperation)
// while its job goes on with its session,
// the proxy queues it and persists the queue, and is killed with
// SIGKILL; the server recovers, a new proxy starts on the same state
// directory and holds the close (no credential survived), and the close
// completes once the same client's credential is accepted again
// through it. The simulator's truth shows the operation open until then
// and closed after.
func TestProxyKill9QueuedCloseCompletesWhenClientReturns(t *testing.T) {
	t.Parallel()
	s := startSim(t, "")
	state := t.TempDir()
	env := []string{"STATE_DIRECTORY=" + state}
	pp := startProxyProcess(t, s, env, "--act-as", "client")
	setFaults(t, s, "unavailable=1@CloseOperation")
	// Driver retries off: one failed close is the driver's last word.
	db := openViaAddr(t, s, pp.listen, dbsql.WithRetries(-1, 0, 0))
	var id string
	ctx, cancel := context.WithTimeout(driverctx.NewContextWithQueryIdCallback(context.Background(), func(q string) {
		if q != "" {
			id = q
		}
	}), time.Minute)
	defer cancel()
	var v any
	// Long enough that its answer does not come back with the execute
	// (direct results close it there): the close is a call of its own.
	if err := db.QueryRowContext(ctx, "SELECT sleep(2)").Scan(&v); err != nil {
		t.Fatalf("the statement itself failed: %v", err)
	}
	// The job keeps its session (closing it would close the operation on
	// the server): it is still running when the proxy dies.
	if id == "" {
		t.Fatal("the driver reported no statement id")
	}
	// The queue is persisted on every change: wait for the statement in
	// the state file, then crash.
	deadline := time.Now().Add(60 * time.Second)
	for !stateHas(state, id) {
		if time.Now().After(deadline) {
			t.Fatalf("the queued close of %s was never persisted under %s; proxy: %s", id, state, pp.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := pp.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	pp.waitExit(10 * time.Second)
	setFaults(t, s, "")
	if o, ok := getTruth(t, s).op(id); !ok || !o.Open {
		t.Fatalf("after the crash the operation should still be open on the server: %+v (found %v)", o, ok)
	}
	pp2 := startProxyProcess(t, s, env, "--act-as", "client")
	// The resumed close waits for its owner: the server still has it open
	// once the new proxy is up (its first line is printed after resuming).
	if o, _ := getTruth(t, s).op(id); !o.Open {
		t.Fatalf("the restarted proxy closed %s without its client's credential", id)
	}
	// The client returns: the same credential, a new session.
	db2 := openViaAddr(t, s, pp2.listen)
	if err := db2.QueryRowContext(context.Background(), "SELECT 1").Scan(&v); err != nil {
		t.Fatalf("the returning client's statement: %v", err)
	}
	tr := waitFor(t, s, 60*time.Second, "the queued close made once the client returned", func(tr truth) bool {
		o, ok := tr.op(id)
		return ok && !o.Open
	})
	o, _ := tr.op(id)
	t.Logf("KILL9 queued close: %s ended %s, open=%v; restarted proxy log: %s", id, o.State, o.Open, pp2.stderr.String())
}

// stateHas reports whether a persisted close queue under dir names id.
func stateHas(dir, id string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "proxy-close-queue-") {
			continue
		}
		b, _ := os.ReadFile(dir + "/" + e.Name())
		if strings.Contains(string(b), id) {
			return true
		}
	}
	return false
}

// The kill -9 test through the two Node drivers, unchanged: the server
// answers 503 to every CloseOperation, the proxy heals it (3 attempts)
// and passes the real 503 on, and the driver's close fails as it really
// does:
//
//   - @databricks/sql 2.1.0 retries the close itself at its defaults
//     (retryMaxAttempts 5, backoff 2, 4, 8 and 16 s: half a minute) and
//     then rejects it with "503 when connecting to resource. Max retry
//     count exceeded."; the test waits for that last word, at the
//     driver's defaults, which keeps it within its minute;
//   - hive-driver 1.0.0 retries nothing: it reports the 503 only as an
//     'error' event of its client (the call's promise never settles; with
//     no listener the process dies of the unhandled event), which the job
//     (node/hive_driver.js) takes as its close's failure.
//
// The job then ends its process without closing its session
// (DBX_KEEP_SESSION), so the operation stays open on the server. The
// proxy queued the close at the first failure and persisted it; it is
// killed with SIGKILL, the server recovers, a new proxy starts on the
// same state directory with --act-as client and holds the close (no
// credential survived; the owner is an HMAC of the normalised
// credential: Bearer T for @databricks/sql, Basic token:T for
// hive-driver). A new process of the same driver with the same
// credential runs a statement through it, and the simulator's truth shows
// the operation closed.
func TestProxyKill9NodeQueuedCloseCompletesWhenClientReturns(t *testing.T) {
	t.Parallel()
	modules := nodeModules(t)
	for _, script := range []string{"databricks_sql.js", "hive_driver.js"} {
		t.Run(script, func(t *testing.T) {
			t.Parallel()
			s := startSim(t, "")
			state := t.TempDir()
			env := []string{"STATE_DIRECTORY=" + state}
			args := []string{"--act-as", "client"}
			ca := "" // hive-driver: plain HTTP with its Basic login
			if script == "databricks_sql.js" {
				// @databricks/sql speaks only TLS.
				cert, key := selfSigned(t)
				args = append(args, "--tls-cert", cert, "--tls-key", key)
				ca = cert
			}
			job := func(listen string, extra ...string) nodeResult {
				host, port, _ := net.SplitHostPort(listen)
				return runNode(t, modules, script, append([]string{"DBX_HOST=" + host, "DBX_PORT=" + port,
					"DBX_PATH=/sql/1.0/warehouses/" + firstWarehouse(t, s), "DBX_TOKEN=" + s.Token(), "DBX_CA=" + ca,
					"DBX_N=1", "DBX_TIMEOUT_MS=90000"}, extra...)...)
			}
			pp := startProxyProcess(t, s, env, args...)
			setFaults(t, s, "unavailable=1@CloseOperation")
			// Long enough that its answer does not come back with the
			// execute (direct results would close it there).
			r := job(pp.listen, "DBX_SQL=SELECT sleep(2)", "DBX_KEEP_SESSION=1")
			if r.OK != 0 || r.Failed != 1 || len(r.Errors) != 1 || !strings.HasPrefix(r.Errors[0], "operation close: ") {
				t.Fatalf("want the statement's rows and its close failed; got %d ok, %d failed: %v", r.OK, r.Failed, r.Errors)
			}
			// The job's process is gone: its statement is the one open.
			var id string
			for _, o := range getTruth(t, s).Operations {
				if o.Open {
					if id != "" {
						t.Fatalf("more than one operation open: %s and %s", id, o.StatementID)
					}
					id = o.StatementID
				}
			}
			if id == "" {
				t.Fatalf("the failed close left nothing open on the server; driver said %v", r.Errors)
			}
			deadline := time.Now().Add(30 * time.Second)
			for !stateHas(state, id) {
				if time.Now().After(deadline) {
					t.Fatalf("the queued close of %s was never persisted under %s; proxy: %s", id, state, pp.stderr.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err := pp.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if !pp.waitExit(10 * time.Second) {
				t.Fatal("the proxy did not die within 10s of SIGKILL")
			}
			setFaults(t, s, "")
			before := getStats(t, s)
			pp2 := startProxyProcess(t, s, env, args...)
			// The restarted proxy resumed the close and holds it for its
			// owner (it logs so before its first line; stderr is copied
			// on its own).
			if !pp2.logSays(10*time.Second, "persisted closes wait for their clients", "count=1") {
				t.Fatalf("the restarted proxy does not say it holds the close for its client: %s", pp2.stderr.String())
			}
			if o, _ := getTruth(t, s).op(id); !o.Open {
				t.Fatalf("the restarted proxy closed %s without its client's credential", id)
			}
			if d := getStats(t, s).minus(before).Requests["CloseOperation"]; d != 0 {
				t.Fatalf("the restarted proxy sent %d CloseOperation before its client returned", d)
			}
			// The client returns: a new process, the same credential.
			if r := job(pp2.listen); r.OK != 1 || r.Failed != 0 || len(r.Errors) != 0 {
				t.Fatalf("the returning client's statement: %d ok, %d failed: %v", r.OK, r.Failed, r.Errors)
			}
			tr := waitFor(t, s, 30*time.Second, "the queued close made once the client returned", func(tr truth) bool {
				o, ok := tr.op(id)
				return ok && !o.Open
			})
			o, _ := tr.op(id)
			// With the returning client's credential: the proxy had none
			// before.
			if !pp2.logSays(10*time.Second, "closed by the proxy", "statement_id="+id, "credentials=client") {
				t.Errorf("the restarted proxy's log does not say it closed %s with its client's credential: %s", id, pp2.stderr.String())
			}
			t.Logf("KILL9 %s: the driver said %q; %s ended %s, open=%v; restarted proxy log: %s", script, r.Errors[0], id, o.State, o.Open, pp2.stderr.String())
		})
	}
}
