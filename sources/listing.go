package sources

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Retry runs fn — exactly one request, named call — through the caller's
// retry policy. Listings that take several requests (query-history pages,
// endpoint pages, one GetIndex per index) call it once per request, so a
// throttled page is retried alone and the pages already read are kept:
// retrying the whole listing would repeat every request and, under a 50 %
// throttle, rarely get through.
type Retry func(ctx context.Context, call string, fn func(context.Context) error) error

// Once is the Retry that makes one attempt (tools and tests without a
// policy).
func Once(ctx context.Context, _ string, fn func(context.Context) error) error { return fn(ctx) }

// TruncatedError says that a listing left something out, how much it read
// and why it stopped. A source returns it together with what it did read;
// the poller keeps that, and reports the truncation (snapshot: an error
// entry of kind "truncated", exit 1 at least).
type TruncatedError struct {
	Call   string // the listing, e.g. "ListQueries"
	What   string // what Seen counts, e.g. "statements"
	Seen   int
	Pages  int
	Reason string // why it stopped, e.g. "the page cap of 200 was reached"
	// Err is the request failure that cut the listing short, if any
	// (reachable with errors.As, so the failure is classified as usual).
	Err error
}

func (e *TruncatedError) Error() string {
	s := fmt.Sprintf("%s: listing truncated after %d pages, %d %s seen: %s", e.Call, e.Pages, e.Seen, e.What, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// NoMatchError is a warehouse selection (--warehouse) that matches none
// of the warehouses the workspace lists: a mistyped id, or the wrong
// workspace. Watching it would show "no operations" forever, which reads
// as all clear; it is reported as an error every round instead.
type NoMatchError struct {
	Call    string   // the listing, "ListWarehouses"
	Given   []string // the selection
	Visible int      // how many warehouses the listing returned
	Listed  []string // their ids, at most MaxListedIDs
}

// MaxListedIDs bounds the warehouse ids a NoMatchError names.
const MaxListedIDs = 10

func (e *NoMatchError) Error() string {
	listed := "none"
	if len(e.Listed) > 0 {
		listed = strings.Join(e.Listed, ", ")
		if e.Visible > len(e.Listed) {
			listed += fmt.Sprintf(" and %d more", e.Visible-len(e.Listed))
		}
	}
	return fmt.Sprintf("--warehouse %s matches none of the %d SQL warehouses the workspace lists (%s): check the ids (a warehouse's Connection details show its id)",
		strings.Join(e.Given, ","), e.Visible, listed)
}

// Pager bounds one paginated listing: a page cap, a time budget, and a
// next_page_token that comes back (a server bug that would otherwise loop
// until the deadline).
type Pager struct {
	Call     string
	What     string
	MaxPages int           // ≤ 0: no cap
	Budget   time.Duration // ≤ 0: no budget
	Now      func() time.Time

	start  time.Time
	pages  int
	tokens map[string]bool
}

// Next records one page read and its next_page_token ("" when the
// listing is complete), and says whether to read the next page. When the
// listing must stop early, it returns a *TruncatedError with seen items.
func (p *Pager) Next(token string, seen int) (more bool, trunc *TruncatedError) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	if p.pages == 0 {
		p.start = now()
		p.tokens = map[string]bool{}
	}
	p.pages++
	if token == "" {
		return false, nil
	}
	stop := func(reason string) (bool, *TruncatedError) {
		return false, &TruncatedError{Call: p.Call, What: p.What, Seen: seen, Pages: p.pages, Reason: reason}
	}
	switch {
	case p.tokens[token]:
		return stop(fmt.Sprintf("the server repeated next_page_token %q (a page loop); stopped instead of reading it again", shorten(token, 24)))
	case p.MaxPages > 0 && p.pages >= p.MaxPages:
		return stop(fmt.Sprintf("the page cap of %d pages was reached", p.MaxPages))
	case p.Budget > 0 && now().Sub(p.start) >= p.Budget:
		return stop(fmt.Sprintf("the time budget of %s per listing was spent", p.Budget))
	}
	p.tokens[token] = true
	return true, nil
}

// Failed wraps a request failure after some pages were read: what was
// read is kept, the failure stays reachable. Before the first page it
// returns err unchanged (nothing was read: the listing failed).
func (p *Pager) Failed(err error, seen int) error {
	if p.pages == 0 || err == nil {
		return err
	}
	return &TruncatedError{Call: p.Call, What: p.What, Seen: seen, Pages: p.pages, Reason: "a page request failed", Err: err}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// IsTruncated reports whether err is (or wraps) a truncation that did not
// fail: the data that came with it is usable as it is.
func IsTruncated(err error) (*TruncatedError, bool) {
	var t *TruncatedError
	if errors.As(err, &t) {
		return t, true
	}
	return nil, false
}

// WarehouseGate answers one question for every warehouse-level call
// (Thrift: status, close, cancel): is that warehouse RUNNING? Databricks
// starts a stopped warehouse when "a connection is established to a
// stopped warehouse from a JDBC/ODBC interface", so a monitor that sends a
// Thrift call to it starts a bill nobody asked for. The gate is fed from
// ListWarehouses; a warehouse it has not seen running within MaxAge — or
// never heard of, or any warehouse while the listing fails — is closed.
// The engine, the proxy's close queue and its abandonment actions all ask
// it before a Thrift call; the REST calls (query history, Statement
// Execution API) are workspace-level and do not start a warehouse.
type WarehouseGate struct {
	MaxAge time.Duration // 0: 1 minute
	Now    func() time.Time

	mu       sync.Mutex
	states   map[string]string
	infos    []model.WarehouseInfo // the last listing's selected warehouses, replaced whole
	visible  int                   // warehouses listed before the selection kept states
	at       time.Time
	listErr  string
	observed bool
}

// Update records a successful ListWarehouses: id → state (RUNNING,
// STOPPED, STARTING, STOPPING, DELETED, …).
func (g *WarehouseGate) Update(states map[string]string) { g.Listed(states, len(states)) }

// Listed is Update for a listing restricted by a selection (--warehouse):
// states holds the selected warehouses, visible counts every warehouse
// the listing returned.
func (g *WarehouseGate) Listed(states map[string]string, visible int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.states = make(map[string]string, len(states))
	for id, st := range states {
		g.states[id] = strings.ToUpper(st)
	}
	g.visible, g.infos = visible, nil
	g.at, g.listErr, g.observed = g.now(), "", true
}

// ListedInfo is Listed with each warehouse's description (the Warehouses
// view): states are taken from infos.
func (g *WarehouseGate) ListedInfo(infos []model.WarehouseInfo, visible int) {
	states := make(map[string]string, len(infos))
	for _, w := range infos {
		states[w.ID] = w.State
	}
	g.Listed(states, visible)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.infos = infos
}

// WarehouseListing says what the last successful listing saw; false
// before one succeeded.
func (g *WarehouseGate) WarehouseListing() (model.WarehouseListing, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.observed {
		return model.WarehouseListing{}, false
	}
	return model.WarehouseListing{At: g.at, Visible: g.visible, Matched: len(g.states), Warehouses: g.infos}, true
}

// Failed records a failed ListWarehouses: the previous states age out.
func (g *WarehouseGate) Failed(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listErr = Redact(err.Error())
}

func (g *WarehouseGate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Running reports whether a warehouse-level call to warehouse id may be
// made, and otherwise why not (one line, for the row's status note and
// the log).
func (g *WarehouseGate) Running(id string) (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	maxAge := g.MaxAge
	if maxAge <= 0 {
		maxAge = time.Minute
	}
	switch {
	case !g.observed && g.listErr != "":
		return false, "warehouse states unknown (ListWarehouses failed: " + g.listErr + "); Thrift is not used, it could start a stopped warehouse"
	case !g.observed:
		return false, "warehouse states not listed yet; Thrift is not used, it could start a stopped warehouse"
	case g.now().Sub(g.at) > maxAge:
		return false, fmt.Sprintf("warehouse states are %s old (ListWarehouses failing); Thrift is not used, it could start a stopped warehouse", g.now().Sub(g.at).Round(time.Second))
	}
	st, ok := g.states[id]
	switch {
	case !ok:
		return false, "warehouse " + id + " is not in ListWarehouses; Thrift is not used"
	case st != "RUNNING":
		return false, "warehouse " + id + " is " + st + "; Thrift would start it"
	}
	return true, ""
}

// States returns a copy of the last listed states and when they were
// listed (zero time: never).
func (g *WarehouseGate) States() (map[string]string, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]string, len(g.states))
	for k, v := range g.states {
		out[k] = v
	}
	return out, g.at
}

// ErrWarehouseNotRunning is returned (wrapped, with the gate's reason) by
// a warehouse-level call that the gate refused to send.
var ErrWarehouseNotRunning = errors.New("not sent: the warehouse is not running")

// NotRunningError builds the refusal for a call the gate stopped.
func NotRunningError(call, reason string) error {
	return fmt.Errorf("%s %w (%s)", call, ErrWarehouseNotRunning, reason)
}

// PartialError is a result that is usable but incomplete: each of Errs
// went wrong (a *TruncatedError, a side listing that failed). The caller
// keeps the data and reports every problem.
type PartialError struct{ Errs []error }

func (e *PartialError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func (e *PartialError) Unwrap() []error { return e.Errs }
