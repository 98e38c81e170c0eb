package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/dbxtop/dbxtop/internal/safefile"
	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/report"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/databricks"
)

// snapshot is `dbxtop snapshot`: it observes the workspace and prints; it returns the Nagios
// exit code (docs/snapshot.md, Exit codes): 0 nothing flagged, 1 warnings, 2 critical,
// 3 could not observe (one line on stderr with the call, cause, error_code
// and request_id). --timeout bounds the whole command, or each observation
// with --watch (a watch runs until --count or an interrupt).
func snapshot(ctx context.Context, cfg SnapshotConfig, stdout, stderr io.Writer) int {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	runCtx := ctx
	if !cfg.Watch {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	logf, closeLog, err := openLog(cfg.LogFile, cfg.Token, "snapshot")
	if err != nil {
		fmt.Fprintln(stderr, "dbxtop snapshot: "+sources.RedactToken(err.Error(), cfg.Token))
		return report.ExitUnknown
	}
	defer closeLog()

	cfg.Learned = openLearned(cfg.WorkspaceConfig, stderr, logf, false)
	obs, err := newFleetObserver(runCtx, cfg, logf)
	if nw := (*databricks.NoWorkspaceError)(nil); errors.As(err, &nw) {
		fmt.Fprintln(stderr, "dbxtop snapshot: "+sources.RedactToken(err.Error(), cfg.Token))
		return report.ExitUnknown
	}
	if err != nil {
		fmt.Fprintln(stderr, "dbxtop snapshot: could not observe: "+sources.RedactToken(err.Error(), cfg.Token))
		return report.ExitUnknown
	}
	defer obs.close()

	if !cfg.Watch {
		s, oerr := obs.observe(runCtx, cfg.Timeout)
		s = filtered(s, cfg.Filter)
		code := exitCodeFor(s, oerr)
		if oerr != nil || len(s.Errors) > 0 {
			fmt.Fprintln(stderr, failureLine(s, oerr, cfg))
		}
		if werr := obs.print(stdout, s, cfg); werr != nil {
			fmt.Fprintln(stderr, "dbxtop snapshot: writing output: "+werr.Error())
			return report.ExitUnknown
		}
		return code
	}

	code := report.ExitUnknown
	for i := 0; cfg.Count == 0 || i < cfg.Count; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return code
			case <-time.After(cfg.Interval):
			}
		}
		roundCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		s, oerr := obs.observe(roundCtx, cfg.Timeout)
		cancel()
		if ctx.Err() != nil {
			// Interrupted mid-round: the half-taken snapshot is not printed.
			return code
		}
		s = filtered(s, cfg.Filter)
		code = exitCodeFor(s, oerr)
		if oerr != nil || len(s.Errors) > 0 {
			fmt.Fprintln(stderr, failureLine(s, oerr, cfg))
		}
		if werr := report.JSONLine(stdout, s); werr != nil {
			fmt.Fprintln(stderr, "dbxtop snapshot: writing output: "+werr.Error())
			return report.ExitUnknown
		}
	}
	return code
}

// filtered applies --filter: only the operations it keeps are printed and
// counted ("": the snapshot as observed).
func filtered(s model.Snapshot, text string) model.Snapshot {
	if text == "" {
		return s
	}
	return s.Filtered(model.FilterSpec{Text: text})
}

// exitCodeFor: discovery failed → 3 (nothing is known); a critical flag
// wins over a partial failure (what is known is already critical);
// otherwise any observation error → 3 (including a round that could not
// read its operations' status: never a false OK); a truncated listing
// alone → at least 1 (what was seen is right, but not everything was
// seen); then warnings → 1, else 0.
func exitCodeFor(s model.Snapshot, observeErr error) int {
	if observeErr != nil {
		return report.ExitUnknown
	}
	code := report.ExitCode(s)
	if code == report.ExitCritical {
		return code
	}
	for _, e := range s.Errors {
		if e.Kind != model.KindTruncated {
			return report.ExitUnknown
		}
	}
	if len(s.Errors) > 0 && code < report.ExitWarning {
		return report.ExitWarning
	}
	return code
}

// observer is one workspace connection and engine, reused across --watch
// rounds so capacity samples accumulate (growth rate, time to full).
type observer struct {
	conn     *conn
	engine   *poller.Engine
	logf     func(string, ...any)
	wsFilter []string

	mu         sync.Mutex
	warehouses []string // resolved once for the header
}

func newObserver(ctx context.Context, cfg SnapshotConfig, logf func(string, ...any)) (*observer, error) {
	c, err := connect(ctx, cfg.WorkspaceConfig, logf)
	if err != nil {
		return nil, err
	}
	o := &observer{conn: c, logf: logf, wsFilter: cfg.Warehouses}
	gate := &authGate{}
	opts := c.engineOptions(cfg.WorkspaceConfig, logf)
	opts.Discoverer = gatedDiscoverer{d: c.disc, g: gate}
	opts.Capacity = gatedCapacity{c: c.capacity, g: gate}
	// A snapshot only observes: no close, no cancel, whatever happens.
	opts.Actions, opts.ReadOnly = nil, true
	o.engine = poller.NewEngine(opts)
	return o, nil
}

// authGate remembers that the workspace refused the credentials (HTTP 401)
// in discovery, so the same round's capacity calls are not sent: each would
// be refused the same way, and a wrong token must cost one request. The
// next successful discovery (a refreshed OAuth token) reopens it.
type authGate struct {
	refused atomic.Pointer[sources.HTTPError]
}

func (g *authGate) record(err error) {
	var he *sources.HTTPError
	switch {
	case err == nil:
		g.refused.Store(nil)
	case errors.As(err, &he) && he.StatusCode == http.StatusUnauthorized:
		g.refused.Store(he)
	}
}

func (g *authGate) check() error {
	if he := g.refused.Load(); he != nil {
		return fmt.Errorf("not sent: the workspace refused the credentials on %s: %w", he.Call, he)
	}
	return nil
}

type gatedDiscoverer struct {
	d sources.Discoverer
	g *authGate
}

func (d gatedDiscoverer) Discover(ctx context.Context, retry sources.Retry) ([]sources.Discovered, error) {
	ds, err := d.d.Discover(ctx, retry)
	d.g.record(err)
	return ds, err
}

type gatedCapacity struct {
	c sources.CapacitySource
	g *authGate
}

func (c gatedCapacity) Endpoints(ctx context.Context, retry sources.Retry) ([]model.Endpoint, error) {
	if err := c.g.check(); err != nil {
		return nil, err
	}
	return c.c.Endpoints(ctx, retry)
}

func (c gatedCapacity) Probe(ctx context.Context, endpoint string) error {
	if err := c.g.check(); err != nil {
		return err
	}
	return c.c.Probe(ctx, endpoint)
}

func httpPathFunc(path string) func(string) string {
	if path == "" {
		return nil
	}
	return func(string) string { return path }
}

// observe runs one engine round and returns its snapshot; err is the
// discovery failure (nothing observed), with the --timeout named when it
// was the deadline that stopped it.
func (o *observer) observe(ctx context.Context, timeout time.Duration) (model.Snapshot, error) {
	err := o.engine.RunOnce(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("the --timeout of %s expired: %w", timeout, err)
	}
	s := o.engine.Snapshot()
	if err == nil {
		s.Workspace.Warehouses = o.headerWarehouses(ctx, s)
	}
	return s, err
}

// headerWarehouses names the observed warehouses: the --warehouse filter,
// else the workspace's list (the warehouse gate's, which discovery
// refreshes every round), else the warehouses of the operations seen. A
// failed listing is a workspace error of its own (discovery reports it).
func (o *observer) headerWarehouses(ctx context.Context, s model.Snapshot) []string {
	if len(o.wsFilter) > 0 {
		return o.wsFilter
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if states, at := o.conn.rest.Gate().States(); !at.IsZero() {
		o.warehouses = make([]string, 0, len(states))
		for id := range states {
			o.warehouses = append(o.warehouses, id)
		}
		sort.Strings(o.warehouses)
	}
	if o.warehouses != nil {
		return o.warehouses
	}
	seen := map[string]bool{}
	var ids []string
	for _, op := range s.Operations {
		if op.WarehouseID != "" && !seen[op.WarehouseID] {
			seen[op.WarehouseID] = true
			ids = append(ids, op.WarehouseID)
		}
	}
	sort.Strings(ids)
	return ids
}

func (o *observer) print(w io.Writer, s model.Snapshot, cfg SnapshotConfig) error {
	switch {
	case cfg.JSON || cfg.Output == outputJSON:
		return report.JSON(w, s)
	case cfg.Output == outputYAML:
		return report.YAML(w, s)
	}
	return report.Table(w, s, tableOptions(w, cfg))
}

// tableOptions: colour only on a terminal without --no-color / NO_COLOR;
// the terminal's width when there is one.
func tableOptions(w io.Writer, cfg SnapshotConfig) report.TableOptions {
	opt := report.TableOptions{ASCII: cfg.ASCII, Wide: cfg.Wide} // not a terminal: report's 100 columns
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return opt
	}
	_, noColorEnv := os.LookupEnv("NO_COLOR")
	opt.Color = !cfg.NoColor && !noColorEnv
	if width, _, err := term.GetSize(f.Fd()); err == nil && width > 0 {
		opt.Width = width
	}
	return opt
}

// failureLine is the one stderr line of a failed observation: the call
// that failed (the SDK/RPC name, not only the engine's step), the cause
// as the retry policy saw it, then error_code and request_id spelled out
// for grep and alert templates, "none" when the server gave none.
func failureLine(s model.Snapshot, observeErr error, cfg SnapshotConfig) string {
	var (
		call, cause, code, reqID string
	)
	if observeErr != nil {
		info := retry.ErrorInfoOf(observeErr)
		call, code, reqID = info.Call, info.ErrorCode, info.RequestID
		var he *sources.HTTPError
		var ce *databricks.CallError
		switch {
		case errors.As(observeErr, &he) && he.Call != "":
			call = he.Call
		case errors.As(observeErr, &ce):
			call = ce.Call
		}
		cause = causeText(observeErr)
	} else {
		// The line names the worst problem: a failure before a truncation.
		e := s.Errors[0]
		for _, x := range s.Errors {
			if x.Kind != model.KindTruncated {
				e = x
				break
			}
		}
		call, code, reqID, cause = e.Call, e.ErrorCode, e.RequestID, e.Message
		if len(s.Errors) > 1 {
			cause += fmt.Sprintf(" (and %d more errors in the output)", len(s.Errors)-1)
		}
		if l := s.Workspace.Listing; l != nil && l.Matched == 0 && len(s.Workspace.Warehouses) > 0 && call == databricks.CallListWarehouses {
			// The listing answered; the selection names none of it
			// (sources.NoMatchError): nothing failed but the ids.
			return sources.RedactToken("dbxtop snapshot: could not observe: "+cause, cfg.Token)
		}
		if e.Kind == model.KindTruncated {
			line := fmt.Sprintf("dbxtop snapshot: incomplete: %s %s [error_code=%s request_id=%s]", orUnknown(call), cause, orNone(code), orNone(reqID))
			return sources.RedactToken(line, cfg.Token)
		}
	}
	what := "the workspace"
	if strings.HasPrefix(call, "Proxy") {
		what = "through the proxy (--proxy)" // its failure is the proxy's, not the workspace's
	}
	line := fmt.Sprintf("dbxtop snapshot: could not observe %s: %s failed: %s [error_code=%s request_id=%s]",
		what, orUnknown(call), cause, orNone(code), orNone(reqID))
	if h := s.Workspace.Host; h != "" && what == "the workspace" {
		line += " (workspace " + h + ")" // which host, when the cause does not say
	}
	return sources.RedactToken(line, cfg.Token)
}

// causeText is the policy's account (attempts, elapsed, cause) without the
// engine's step names that precede it.
func causeText(err error) string {
	var g *retry.GiveUpError
	if errors.As(err, &g) {
		s := g.Error()
		if i := strings.Index(s, ": "); i >= 0 {
			s = s[i+2:]
		}
		if pre, _, ok := strings.Cut(err.Error(), "discovering operations: "); ok && strings.HasPrefix(pre, "the --timeout") {
			s = strings.TrimSuffix(pre, ": ") + ": " + s
		}
		return s
	}
	return err.Error()
}

func orUnknown(call string) string {
	if call == "" {
		return "unknown call"
	}
	return call
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// openLog opens --log-file for appending (0600); without one, logging is
// a no-op. Lines never contain the token.
// maxLogLine bounds one --log-file line (a give-up with its cause and
// request id is a few hundred bytes).
const maxLogLine = 2000

func openLog(path, token, who string) (func(string, ...any), func(), error) {
	if path == "" {
		return func(string, ...any) {}, func() {}, nil
	}
	f, err := safefile.OpenAppend(path, 0o600)
	if err != nil {
		return nil, nil, logFileError(path, err)
	}
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		// One clean line, bounded; an SDK request-log dump is cut off.
		line := sources.OneLine(sources.RedactToken(fmt.Sprintf(format, args...), token), maxLogLine)
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(f, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), who, line)
	}
	return logf, func() { _ = f.Close() }, nil
}
