package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
	"github.com/dbxtop/dbxtop/sources/sim"
	"github.com/dbxtop/dbxtop/tui"
)

// The command bodies of the TUI, demo and sim commands (newApp wires
// them): this file connects the command tree to the packages that do the
// work (sources → poller → tui).

// oneCore runs the process on one core (GOMAXPROCS=1) unless the
// environment sets GOMAXPROCS. The TUI's work is a few percent of a core
// and waits on the network; with a second core the scheduler's spinning
// threads and the collector's idle mark workers burn more CPU than the
// work itself, on the shared bastion an operator runs it from.
func oneCore() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// shutdownGrace bounds what happens after the operator quits: one last
// attempt at queued closes of adopted operations, and stopping the
// simulator.
const shutdownGrace = 5 * time.Second

func simOptions(c SimConfig, logger *slog.Logger) sim.Options {
	return sim.Options{
		Listen:      c.Listen,
		Token:       c.Token,
		Seed:        c.Seed,
		Faults:      c.Faults,
		Scenario:    c.Scenario,
		Warehouses:  c.Warehouses,
		IdleTimeout: c.IdleTimeout,
		LeakTimeout: c.LeakTimeout,
		Ops:         c.Ops,
		Latency:     c.Latency,
		HistoryLag:  c.HistoryLag,
		LoadRun:     c.LoadRun,
		Logger:      logger,

		LenientHandles:        !c.CheckHandleSecrets,
		StatementAPIForThrift: c.StatementAPIForThrift,
		OwnerActivity:         c.OwnerActivity,
	}
}

// serveSim is `dbxtop sim`: serve until interrupted; the first line of
// stdout says where and with which token.
func serveSim(ctx context.Context, c SimConfig, stdout, stderr io.Writer) int {
	so := simOptions(c, nil)
	var px embeddedProxy
	defer px.close()
	if c.wantsEmbeddedProxy() {
		so.Proxy = px.hook(ctx)
	}
	srv, err := sim.Start(ctx, so)
	if err != nil {
		fmt.Fprintln(stderr, "dbxtop sim: "+simErrText(err))
		return 1
	}
	// Everything a client needs to count down correctly, in Go duration
	// syntax (what --server-idle-timeout and --leak-after take), and the
	// embedded proxy's admin API when it runs one.
	idle, leak := srv.Timeouts()
	first := fmt.Sprintf("host=%s token=%s idle_timeout=%s leak_timeout=%s", srv.URL(), srv.Token(), idle, leak)
	if px.srv != nil {
		first += fmt.Sprintf(" proxy=%s proxy_token=%s", px.srv.AdminURL(), px.srv.AdminToken())
	}
	return serveUntilDone(ctx, "dbxtop sim", first, srv.Close, stdout, stderr)
}

// serveUntilDone is the shape of the serving commands (sim, proxy): say
// where on the first line of stdout (flushed, for scripts that read it),
// serve until ctx ends (an interrupt), then stop within shutdownGrace.
func serveUntilDone(ctx context.Context, name, firstLine string, stop func(context.Context) error, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, firstLine)
	if f, ok := stdout.(*os.File); ok {
		_ = f.Sync()
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := stop(sctx); err != nil {
		fmt.Fprintln(stderr, name+": shutdown: "+err.Error())
		return 1
	}
	fmt.Fprintln(stderr, name+": stopped")
	return 0
}

// demo is `dbxtop demo`: the simulator in-process on loopback, and the TUI
// on it. Quitting stops both.
func demo(ctx context.Context, ws WorkspaceConfig, sc SimConfig, stdout, stderr io.Writer) int {
	if code, ok := needTerminal("dbxtop demo", stdout, stderr); !ok {
		return code
	}
	simCtx, stopSim := context.WithCancel(ctx)
	defer stopSim()
	so := simOptions(sc, nil)
	var px embeddedProxy
	defer px.close()
	if sc.wantsEmbeddedProxy() {
		so.Proxy = px.hook(simCtx)
	}
	srv, err := sim.Start(simCtx, so)
	if err != nil {
		fmt.Fprintln(stderr, "dbxtop demo: simulator: "+simErrText(err))
		return 1
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Close(sctx)
	}()
	ws.Host, ws.Token = srv.URL(), srv.Token()
	if px.srv != nil {
		ws.Proxies, ws.ProxyToken = []string{px.srv.AdminURL()}, px.srv.AdminToken()
	}
	ws.simStrictHandles = sc.CheckHandleSecrets
	return runWorkspaceTUI(ctx, ws, true, stdout, stderr, "dbxtop demo")
}

// monitor is the root command: the TUI on the configured workspace.
func monitor(ctx context.Context, ws WorkspaceConfig, stdout, stderr io.Writer) int {
	if code, ok := needTerminal("dbxtop", stdout, stderr); !ok {
		return code
	}
	return runWorkspaceTUI(ctx, ws, false, stdout, stderr, "dbxtop")
}

// simErrText drops the simulator package's own "sim: " prefix: the
// command's prefix already says who failed.
func simErrText(err error) string {
	return strings.TrimPrefix(err.Error(), "sim: ")
}

// needTerminal refuses to draw a full-screen UI into a pipe or a file.
func needTerminal(name string, stdout, stderr io.Writer) (int, bool) {
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(f.Fd()) {
		return 0, true
	}
	fmt.Fprintln(stderr, name+": standard output is not a terminal; for scripts use `dbxtop snapshot` (add --json for JSON)")
	return 2, false
}

// runWorkspaceTUI connects to a workspace (real or simulated), follows it
// with the engine and runs the TUI until the operator quits.
func runWorkspaceTUI(ctx context.Context, ws WorkspaceConfig, simulated bool, stdout, stderr io.Writer, name string) int {
	logf, closeLog, err := openLog(ws.LogFile, ws.Token, strings.TrimPrefix(name, "dbxtop "))
	if err != nil {
		fmt.Fprintln(stderr, name+": "+sources.RedactToken(err.Error(), ws.Token))
		return 1
	}
	defer closeLog()
	ctx = sdkLogContext(ctx, logf)

	if !simulated {
		// The demo's endpoints live on a throwaway loopback port: what it
		// learns stays in memory, out of the operator's state file.
		ws.Learned = openLearned(ws, stderr, logf, true)
		oneCore() // the demo keeps every core: its simulator shares the process
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	sess, code, ok := startSession(ctx, runCtx, ws, simulated, logf, stderr, name)
	if !ok {
		return code
	}
	defer sess.closeConns()

	// tui.Run leaves signals to us: main cancels ctx on SIGINT/SIGTERM,
	// which ends the UI (nil error) and then the engine.
	opts := tui.Options{
		NoColor:    ws.NoColor,
		ASCII:      ws.ASCII,
		ReadOnly:   ws.ReadOnly,
		Mouse:      ws.Mouse,
		Refresh:    ws.Refresh, // the header shows the engine's real period
		ActionPath: sess.actionPath,
		Workspace:  sess.workspace,
		// A set action skips targets whose client called within it.
		InactivityWarn: ws.Thresholds.InactivityWarn,
		ExportDir:      ws.ExportDir,
		Version:        Version,
	}
	if len(ws.Resolved) > 0 {
		// The config file's UI defaults (the same for every context).
		s := ws.Resolved[0]
		opts.View, opts.Sort, opts.Columns = s.View, s.Sort, s.Columns
		opts.Colors = tui.Colors{Warning: s.Colors.Warning, Critical: s.Colors.Critical, OK: s.Colors.OK, Accent: s.Colors.Accent, Dim: s.Colors.Dim}
	}
	uiErr := tui.Run(runCtx, sess.eng, opts, os.Stdin, stdout)
	interrupted := ctx.Done() // a signal while shutting down ends the wait at once
	if ctx.Err() != nil {
		interrupted = nil // that signal ended the UI; a second one ends the process (main)
	}
	stop()
	f, cerr := sess.result()
	finishTUI(f, sess.engDone, interrupted, logf, stderr, name)
	if cerr != nil {
		fmt.Fprintln(stderr, name+": "+sources.RedactToken(cerr.Error(), ws.Token))
		return 1
	}
	if uiErr != nil {
		fmt.Fprintln(stderr, name+": "+sources.RedactToken(uiErr.Error(), ws.Token))
		return 1
	}
	return 0
}

// engineStopWait bounds how long quitting waits for the engine's calls to
// end: a call stuck where its context is not honoured (the SDK's
// credential chain holds a lock for minutes) must not keep the process.
const engineStopWait = time.Second

// finishTUI ends a TUI session: it waits engineStopWait at most for the
// engine, then makes one last attempt at each queued close of dbxtop's
// own within shutdownGrace, printing the ids still open. interrupted
// (a signal) ends both waits at once.
func finishTUI(f *poller.Fleet, engDone <-chan error, interrupted <-chan struct{}, logf func(string, ...any), stderr io.Writer, name string) {
	select {
	case err := <-engDone:
		if err != nil && !errors.Is(err, context.Canceled) {
			logf("engine: %v", err)
		}
	case <-time.After(engineStopWait):
		logf("engine: calls still in flight at exit (not waited for)")
	case <-interrupted:
		return
	}
	if f == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	left := make(chan []string, 1)
	go func() { left <- f.Shutdown(sctx) }()
	select {
	case ids := <-left:
		for _, id := range ids {
			fmt.Fprintf(stderr, "%s: adopted operation %s is still open on the server (its close did not succeed before exit)\n", name, id)
		}
	case <-sctx.Done():
		fmt.Fprintf(stderr, "%s: the last closes of adopted operations did not finish within %s; they may still be open\n", name, shutdownGrace)
	case <-interrupted:
		fmt.Fprintf(stderr, "%s: interrupted: the last closes of adopted operations may not have run\n", name)
	}
}

// tuiSession is the engine a TUI session runs on: the fleet once
// connected, or the startingEngine that stands in while connecting.
type tuiSession struct {
	eng        tui.Engine
	workspace  model.Workspace
	actionPath string
	engDone    chan error

	mu      sync.Mutex
	fleet   *poller.Fleet
	connErr error
	closes  func()
}

type built struct {
	eng        *poller.Fleet
	closeConns func()
	actionPath string
	err        error
}

// startSession connects to the workspace and starts its engine on
// runCtx. Connecting (configuration, credentials) may take long: past
// startGrace the session starts with a startingEngine that says what it
// waits for, and the fleet takes over when it is built. A failure within
// startGrace ends the command before the screen is taken (ok false).
func startSession(ctx, runCtx context.Context, ws WorkspaceConfig, simulated bool, logf func(string, ...any), stderr io.Writer, name string) (*tuiSession, int, bool) {
	conned := make(chan built, 1)
	go func() {
		e, c, ap, err := fleetOf(ctx, ws, simulated, logf, nil)
		conned <- built{e, c, ap, err}
	}()
	s := &tuiSession{workspace: model.Workspace{Host: ws.Host, Warehouses: ws.Warehouses}, engDone: make(chan error, 1)}
	select {
	case b := <-conned:
		if b.err != nil {
			fmt.Fprintln(stderr, name+": "+sources.RedactToken(b.err.Error(), ws.Token))
			if nw := (*databricks.NoWorkspaceError)(nil); errors.As(b.err, &nw) {
				return nil, exitUsage, false // before the terminal is taken: nothing to watch
			}
			return nil, 1, false
		}
		if ms := b.eng.Members(); len(ms) == 1 {
			s.workspace = ms[0].Engine.Snapshot().Workspace
		}
		s.eng, s.actionPath = b.eng, b.actionPath
		s.connected(runCtx, b)
		return s, 0, true
	case <-time.After(startGrace):
	}
	starting := newStartingEngine(s.workspace, ws.ReadOnly, authWaiting(ws))
	s.eng = starting
	go func() {
		var b built
		select {
		case b = <-conned:
		case <-runCtx.Done():
			s.engDone <- nil
			return
		}
		if b.err != nil {
			s.mu.Lock()
			s.connErr = b.err
			s.mu.Unlock()
			starting.failed(errors.New(sources.RedactToken(b.err.Error(), ws.Token)))
			s.engDone <- nil
			return
		}
		starting.ready(runCtx, b.eng)
		s.connected(runCtx, b)
	}()
	return s, 0, true
}

// connected starts the built fleet on runCtx.
func (s *tuiSession) connected(runCtx context.Context, b built) {
	s.mu.Lock()
	s.fleet, s.closes = b.eng, b.closeConns
	s.mu.Unlock()
	go func() { s.engDone <- b.eng.Run(runCtx) }()
}

// result is the fleet (nil: never connected) and the connection error.
func (s *tuiSession) result() (*poller.Fleet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fleet, s.connErr
}

// closeConns drops the connections of a fleet that was built.
func (s *tuiSession) closeConns() {
	s.mu.Lock()
	c := s.closes
	s.mu.Unlock()
	if c != nil {
		c()
	}
}
