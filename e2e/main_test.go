package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// bin is the dbxtop binary under test, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse() // testing.Short and the watchdog read the flags
	if testing.Short() {
		// Every test here runs the built binary in real time (about six
		// minutes in all); -short is the quick part of the suite.
		fmt.Println("e2e: skipped with -short (the end-to-end tests run the built binary for minutes)")
		return 0
	}
	if p := os.Getenv("DBXTOP_BIN"); p != "" {
		bin = p
	} else {
		dir, err := os.MkdirTemp("", "dbxtop-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "dbxtop")
		// Build from the module root (this package's parent directory).
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Dir = ".."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: go build: %v\n%s", err, out)
			return 1
		}
	}
	stop := watchdog(os.Stderr)
	// Every child process is waited for, so no goroutine of os/exec may
	// outlive the tests.
	code := m.Run()
	stop()
	if code == 0 {
		// opencensus (a dependency of databricks-sdk-go) starts its worker
		// in an init function; it is not ours to stop.
		if err := goleak.Find(goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start")); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: goroutine leak:", err)
			return 1
		}
	}
	return code
}

// watchdog ends the run when the package passes its budget
// (packageBudget × budgetSlack, budget_test.go) or shortly before go
// test's -timeout would, whichever comes first, naming the tests still
// running, how long each has run, and where they wait (this package's
// frames of every goroutine that has any). A timed-out package otherwise
// ends in a dump of every goroutine whose end, all a CI log may keep,
// shows only net/http's idle connections. The returned func disarms it.
func watchdog(w io.Writer) (stop func()) {
	limit := time.Duration(float64(packageBudget) * budgetSlack())
	why := fmt.Sprintf("the package's budget, %s idle × %.0f for a loaded machine (e2e/budget_test.go)", packageBudget, budgetSlack())
	if f := flag.Lookup("test.timeout"); f != nil {
		if timeout, err := time.ParseDuration(f.Value.String()); err == nil && timeout > 0 {
			if at := timeout - min(timeout/10, 30*time.Second); at < limit {
				limit, why = at, fmt.Sprintf("go test -timeout %s", timeout)
			}
		}
	}
	t := time.AfterFunc(limit, func() {
		fmt.Fprintf(w, "e2e: watchdog: still running %s after the start (%s); ending the run.\ntests still running:\n%s\nwhere they wait:\n%s",
			limit, why, stillRunning(), ownStacks())
		os.Exit(3)
	})
	return func() { t.Stop() }
}

// ownStacks is every goroutine's stack that passes through this package,
// with only this package's frames (function and line), the test last.
func ownStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		var own []string
		for i := 1; i+1 < len(lines); i += 2 {
			if strings.Contains(lines[i], "dbxtop/e2e.") {
				own = append(own, "    "+strings.TrimSpace(lines[i])+" "+strings.TrimSpace(lines[i+1]))
			}
		}
		if len(own) > 0 {
			fmt.Fprintf(&out, "  %s\n%s\n", lines[0], strings.Join(own, "\n"))
		}
	}
	return out.String()
}

// runOpts describes one run of the binary.
type runOpts struct {
	args    []string
	env     []string // added to the clean environment (KEY=VALUE)
	home    string   // HOME of the child; "" → a fresh temp dir
	dir     string   // working directory; "" → home
	timeout time.Duration
	stdout  *os.File // nil → captured in a buffer
}

// result is what a run produced.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %s\nstdout:\n%s\nstderr:\n%s", r.code, r.elapsed, r.stdout, r.stderr)
}

// cleanEnv is the child's environment: PATH only, a private HOME, and no
// Databricks settings of the machine running the tests.
func cleanEnv(home string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb", "LANG=C.UTF-8"}
	return append(env, extra...)
}

// run executes the binary and waits for it (bounded by o.timeout).
func run(t *testing.T, o runOpts) result {
	t.Helper()
	if o.timeout == 0 {
		o.timeout = 30 * time.Second
	}
	if o.home == "" {
		o.home = t.TempDir()
	}
	if o.dir == "" {
		o.dir = o.home
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	c := exec.CommandContext(ctx, bin, o.args...)
	c.Env = cleanEnv(o.home, o.env...)
	c.Dir = o.dir
	c.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	if o.stdout != nil {
		c.Stdout = o.stdout
	} else {
		c.Stdout = &stdout
	}
	c.Stderr = &stderr
	start := time.Now()
	err := c.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("dbxtop %s: %v (timeout %s)\n%s", strings.Join(o.args, " "), err, o.timeout, r)
	}
	return r
}

// noStackTrace fails when out looks like a Go panic or stack dump.
func noStackTrace(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range []string{"goroutine ", "panic:", "[signal "} {
		if strings.Contains(out, s) {
			t.Errorf("%s contains %q (a stack trace?):\n%s", what, s, out)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the copying goroutine of
// os/exec and the test reading it; first is closed at the first newline.
type lockedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	first chan struct{}
	lines chan string // every complete line, when non-nil (buffered)
	part  []byte
}

func newLockedBuffer(lines int) *lockedBuffer {
	b := &lockedBuffer{first: make(chan struct{})}
	if lines > 0 {
		b.lines = make(chan string, lines)
	}
	return b
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	b.part = append(b.part, p...)
	for {
		i := bytes.IndexByte(b.part, '\n')
		if i < 0 {
			break
		}
		line := string(b.part[:i])
		b.part = b.part[i+1:]
		b.once.Do(func() { close(b.first) })
		if b.lines != nil {
			select {
			case b.lines <- line:
			default: // a slow reader loses lines, never blocks the child
			}
		}
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is a long-running child (sim, snapshot --watch) the test signals.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan struct{}
	err    error // valid after done
	exited time.Time
}

// start launches the binary without waiting for it; Cleanup kills it if
// the test did not stop it.
func start(t *testing.T, home string, env []string, args ...string) *proc {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = cleanEnv(home, env...)
	c.Dir = home
	c.WaitDelay = 2 * time.Second
	p := &proc{t: t, cmd: c, stdout: newLockedBuffer(64), stderr: newLockedBuffer(0), done: make(chan struct{})}
	c.Stdout, c.Stderr = p.stdout, p.stderr
	if err := c.Start(); err != nil {
		t.Fatalf("start dbxtop %v: %v", args, err)
	}
	go func() {
		p.err = c.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = c.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitFirstLine waits for the first line of stdout (or the exit).
func (p *proc) waitFirstLine(timeout time.Duration) string {
	p.t.Helper()
	select {
	case <-p.stdout.first:
		line, _, _ := strings.Cut(p.stdout.String(), "\n")
		return line
	case <-p.done:
		p.t.Fatalf("dbxtop exited before its first line: %v\nstdout:\n%s\nstderr:\n%s", p.err, p.stdout, p.stderr)
	case <-time.After(timeout):
		p.t.Fatalf("no first line within %s\nstderr:\n%s", timeout, p.stderr)
	}
	return ""
}

// signalAndWait sends sig and waits (bounded) for the exit; it returns the
// exit status and how long the exit took after the signal.
func (p *proc) signalAndWait(sig syscall.Signal, bound time.Duration) (int, time.Duration) {
	p.t.Helper()
	sent := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-p.done:
	case <-time.After(bound):
		p.t.Fatalf("still running %s after %v\nstderr:\n%s", bound, sig, p.stderr)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		code = ee.ExitCode()
	} else if p.err != nil {
		p.t.Fatalf("wait: %v", p.err)
	}
	return code, p.exited.Sub(sent)
}

// simProc is a running `dbxtop sim`.
type simProc struct {
	*proc
	host, token string
}

// startSim runs `dbxtop sim args…` and parses its first line
// (host=… token=…). Cleanup stops it with SIGTERM.
func startSim(t *testing.T, home string, args ...string) *simProc {
	t.Helper()
	p := start(t, home, nil, append([]string{"sim"}, args...)...)
	line := p.waitFirstLine(20 * time.Second)
	s := &simProc{proc: p}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "host="); ok {
			s.host = v
		}
		if v, ok := strings.CutPrefix(f, "token="); ok {
			s.token = v
		}
		for _, k := range []string{"idle_timeout=", "leak_timeout="} {
			if v, ok := strings.CutPrefix(f, k); ok {
				if d, err := time.ParseDuration(v); err != nil || d <= 0 {
					t.Fatalf("sim first line %q: %s%q is not a Go duration", line, k, v)
				}
			}
		}
	}
	if s.host == "" || s.token == "" || !strings.Contains(line, " idle_timeout=") || !strings.Contains(line, " leak_timeout=") {
		t.Fatalf("sim first line %q: want host=… token=… idle_timeout=… leak_timeout=…", line)
	}
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
			}
		}
	})
	return s
}

// closedPort returns a loopback port nothing listens on: it was just
// bound and released (the kernel does not hand it out again at once).
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// heldPort returns a loopback port this test listens on until it ends.
func heldPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if l := strings.TrimRight(sc.Text(), "\r"); l != "" {
			out = append(out, l)
		}
	}
	return out
}
