package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift"
	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// SimClientUA is the User-Agent of a simulated client of the given kind.
func SimClientUA(kind string) string { return "simclient/1.0 (" + kind + ")" }

// viaProxy marks a workload client key whose client goes through the proxy.
const viaProxy = "@proxy"

// workload runs the scenario's simulated clients. They use the project's
// own Thrift client over loopback, exactly as an outside client would.
type workload struct {
	s       *Server
	speed   float64
	rng     *rand.Rand
	rngMu   sync.Mutex
	clients map[string]*thrift.Client
	tr      *http.Transport
	wg      sync.WaitGroup
	sem     chan struct{} // bounds concurrent simulated statements
}

// d compresses a timeline duration by the scenario speed.
func (w *workload) d(x time.Duration) time.Duration { return time.Duration(float64(x) / w.speed) }

func (w *workload) intn(n int) int {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.IntN(n)
}

func (w *workload) pick(xs []string) string { return xs[w.intn(len(xs))] }

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// newWorkload prepares the scenario's clients and scripted faults. It runs
// before the server accepts requests, so the rules are never read while
// being set.
func (s *Server) newWorkload() (*workload, error) {
	if s.o.Scenario == ScenarioQuiet || s.o.Scenario == ScenarioVectorIncident {
		// vector-incident's writer is part of the vector side (vector.go).
		return nil, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The simulated clients share a bounded pool: 10,000 clients each on
	// a connection of its own exhausted loopback ports and stalled every
	// answer (tens of thousands of sockets); queued on 256 connections
	// they cost what their requests cost.
	tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost = 256, 256
	w := &workload{s: s, speed: s.o.Speed, tr: tr,
		rng:     rand.New(rand.NewPCG(uint64(s.o.Seed), 0xd3b0)),
		clients: map[string]*thrift.Client{}, sem: make(chan struct{}, 256)}
	for _, k := range []string{KindHealthy, KindAbandons, KindCloseFails} {
		c, err := thrift.NewClient(thrift.Options{Host: s.url, Token: s.token, UserAgent: SimClientUA(k),
			Transport: tr, Timeout: 30 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("sim: workload client: %w", err)
		}
		w.clients[k] = c
	}
	if s.proxyURL != "" && s.o.Scenario == ScenarioDemo {
		// The proxied share: same clients, pointed at the proxy.
		for _, k := range []string{KindHealthy, KindGivesUp, KindCloseFailsProxied, KindLeaksProxied} {
			c, err := thrift.NewClient(thrift.Options{Host: s.proxyURL, Token: s.token, UserAgent: SimClientUA(k),
				Transport: tr, Timeout: 30 * time.Second})
			if err != nil {
				return nil, fmt.Errorf("sim: proxied workload client: %w", err)
			}
			w.clients[k+viaProxy] = c
		}
	}
	if s.o.Scenario == ScenarioDemo {
		s.rules = w.demoRules()
	}
	return w, nil
}

// run starts the scenario; everything it starts ends when ctx ends, and
// the server's WaitGroup waits for it.
func (w *workload) run(ctx context.Context) {
	switch w.s.o.Scenario {
	case ScenarioDemo:
		w.goDo(ctx, w.demo)
	case ScenarioLoad:
		w.goDo(ctx, w.load)
	}
	w.s.wg.Add(1)
	go func() {
		defer w.s.wg.Done()
		<-ctx.Done()
		w.wg.Wait()
		w.tr.CloseIdleConnections()
	}()
}

func (w *workload) goDo(ctx context.Context, f func(context.Context)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f(ctx)
	}()
}

// ---- the demo cast ----------------------------------------------------------

var (
	demoUsers = []string{"alice@example.com", "bob@example.com", "etl-svc@example.com", "carol@example.com"}
	// Client applications as the User-Agent / client_application gives them:
	// the healthy pool, and (below) the two that misbehave, each with its
	// own driver version so the Clients view can name the culprit.
	demoApps = []string{"Tableau 2025.3", "dbt-databricks 1.10.4", "PowerBI 2.147", "databricks-sql-go 1.14.0", "Databricks JDBC 2.7.3"}
	demoSQL  = []string{
		"SELECT region, sum(amount) AS revenue FROM sales.orders WHERE order_date >= '2026-%02d-01' GROUP BY region ORDER BY revenue DESC",
		"SELECT customer_id, count(*) AS orders FROM sales.orders WHERE status = 'SHIPPED' AND order_date > current_date() - INTERVAL %d DAYS GROUP BY customer_id",
		"MERGE INTO analytics.daily_kpis t USING staging.kpis_%02d s ON t.day = s.day WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
		"SELECT p.category, avg(r.rating) FROM catalog.products p JOIN catalog.reviews r ON p.id = r.product_id WHERE r.created_at > '2026-%02d-15' GROUP BY p.category",
		"INSERT INTO finance.ledger_snapshots SELECT * FROM finance.ledger WHERE posted_date = date_sub(current_date(), %d)",
		"SELECT date_trunc('hour', event_time) AS h, count(DISTINCT user_id) FROM web.events WHERE event_date = current_date() - %d GROUP BY 1 ORDER BY 1",
		"OPTIMIZE sales.orders WHERE order_date >= '2026-%02d-01' ZORDER BY (customer_id)",
		"SELECT * FROM support.tickets WHERE priority = 'P1' AND updated_at > now() - INTERVAL %d HOURS ORDER BY updated_at DESC LIMIT 500",
	}
	demoErrors = []string{
		"[TABLE_OR_VIEW_NOT_FOUND] The table or view `staging`.`kpis_archive` cannot be found.",
		"[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0.",
	}
)

func (w *workload) sqlText() string {
	t := w.pick(demoSQL)
	return fmt.Sprintf(t, 1+w.intn(12))
}

// demo runs the cast of docs/simulator.md (Scenarios) on a compressed timeline (see
// docs/simulator.md for the minute-by-minute plan).
func (w *workload) demo(ctx context.Context) {
	whs := w.s.WarehouseIDs()
	wh := func(i int) string { return whs[i%len(whs)] }
	// Two long healthy statements, one on the outage warehouse, so that
	// dbxtop follows something there when the observer outage starts.
	w.spawn(ctx, func() {
		w.healthy(ctx, KindHealthy, wh(0), "etl-svc@example.com", "dbt-databricks 1.10.4", w.sqlText(), 5*time.Minute, "")
	})
	w.spawn(ctx, func() {
		w.healthy(ctx, KindHealthy, wh(1), "alice@example.com", "Tableau 2025.3", w.sqlText(), 4*time.Minute, "")
	})
	w.goDo(ctx, func(ctx context.Context) { w.ingest(ctx) })
	// The troubled clients of the cast, each at its first time and then
	// every period (docs/simulator.md).
	w.every(ctx, 3*time.Second, 75*time.Second, func(i int) { w.abandons(ctx, wh(i+2)) })
	w.every(ctx, 5*time.Second, 60*time.Second, func(i int) { w.closeFails(ctx, wh(i+1)) })
	if w.s.proxyURL != "" {
		// Through the embedded proxy.
		w.every(ctx, 6*time.Second, 75*time.Second, func(i int) { w.givesUp(ctx, wh(i+1)) })
		w.every(ctx, 8*time.Second, 60*time.Second, func(i int) { w.closeFailsProxied(ctx, wh(i+2)) })
		w.every(ctx, 10*time.Second, 60*time.Second, func(i int) { w.leaksProxied(ctx, wh(i+1)) })
	}
	// Steady healthy traffic: a statement every 2-4 s, 2-40 s long.
	for i := 0; ; i++ {
		if !sleep(ctx, w.d(time.Duration(2000+w.intn(2000))*time.Millisecond)) {
			return
		}
		run := time.Duration(2+w.intn(38)) * time.Second
		fail := ""
		if w.intn(10) == 0 {
			fail = w.pick(demoErrors)
		}
		user, app, sql, whID := w.pick(demoUsers), w.pick(demoApps), w.sqlText(), wh(w.intn(len(whs)))
		key := KindHealthy
		if w.s.proxyURL != "" && i%2 == 1 {
			key += viaProxy // every other healthy statement goes through the proxy
		}
		w.spawn(ctx, func() { w.healthy(ctx, key, whID, user, app, sql, run, fail) })
	}
}

// every spawns client(0) after first, then client(i) every period
// (both on the simulator's compressed clock), until ctx ends.
func (w *workload) every(ctx context.Context, first, period time.Duration, client func(i int)) {
	w.goDo(ctx, func(ctx context.Context) {
		if !sleep(ctx, w.d(first)) {
			return
		}
		for i := 0; ; i++ {
			w.spawn(ctx, func() { client(i) })
			if !sleep(ctx, w.d(period)) {
				return
			}
		}
	})
}

// spawn runs one simulated statement, bounded by the semaphore.
func (w *workload) spawn(ctx context.Context, f func()) {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.sem }()
		f()
	}()
}

// start opens a session and executes sql with the given plan.
func (w *workload) start(ctx context.Context, key, wh, user, app, sql string, run time.Duration, fail string) (*thrift.Client, thrift.Session, *thrift.Operation, error) {
	c := w.clients[key]
	kind := strings.TrimSuffix(key, viaProxy)
	sess, err := c.OpenSession(ctx, wh)
	if err != nil {
		return c, sess, nil, err
	}
	w.s.hints.push(kind, sql, hint{user: user, app: app, run: w.d(run), fail: fail})
	op, err := c.Execute(ctx, sess, sql, false)
	if err != nil {
		w.s.hints.drop(kind, sql)
		return c, sess, nil, err
	}
	return c, sess, op, nil
}

// pollUntilDone polls every interval until the operation is terminal.
func (w *workload) pollUntilDone(ctx context.Context, c *thrift.Client, ref sources.Ref, every time.Duration) (sources.Status, error) {
	for {
		if !sleep(ctx, every) {
			return sources.Status{}, ctx.Err()
		}
		st, err := c.GetOperationStatus(ctx, ref)
		if err != nil {
			return st, err
		}
		if st.State.Terminal() {
			return st, nil
		}
	}
}

// healthy: execute, poll every second, fetch, close the operation and the
// session. Transport errors are retried a few times, as a careful client.
func (w *workload) healthy(ctx context.Context, key, wh, user, app, sql string, run time.Duration, fail string) {
	c, sess, op, err := w.start(ctx, key, wh, user, app, sql, run, fail)
	if err != nil {
		w.debug("healthy client could not start", "warehouse", wh, "err", err)
		return
	}
	defer w.bestEffort(ctx, func(ctx context.Context) error { return c.CloseSession(ctx, sess) })
	var st sources.Status
	for tries := 0; ; {
		st, err = w.pollUntilDone(ctx, c, op.Ref, w.d(time.Second))
		if err == nil || ctx.Err() != nil || errors.Is(err, sources.ErrHandleGone) {
			break
		}
		if tries++; tries > 5 {
			w.debug("healthy client gave up polling", "statement", op.Ref.StatementID, "err", err)
			return
		}
	}
	if err != nil {
		return
	}
	if st.State == "FINISHED" {
		for {
			p, err := c.FetchResults(ctx, op.Ref, 10000)
			if err != nil || !p.HasMoreRows {
				break
			}
		}
	}
	w.bestEffort(ctx, func(ctx context.Context) error { return c.CloseOperation(ctx, op.Ref) })
}

// abandons: its first poll meets a connection reset (injected by the
// scripted rule for this client) and, like the JDBC Thrift path before
// the fix, it gives up: no cancel, no close. The statement runs 10 min.
func (w *workload) abandons(ctx context.Context, wh string) {
	c, _, op, err := w.start(ctx, KindAbandons, wh, "bob@example.com", "Databricks JDBC 2.6.36",
		fmt.Sprintf("SELECT o.*, c.segment FROM sales.orders o JOIN crm.customers c ON o.customer_id = c.id WHERE o.order_date BETWEEN '2025-01-01' AND '2026-%02d-30'", 1+w.intn(12)),
		10*time.Minute, "")
	if err != nil {
		w.debug("abandons client could not start", "warehouse", wh, "err", err)
		return
	}
	if _, err := w.pollUntilDone(ctx, c, op.Ref, w.d(time.Second)); err != nil {
		w.debug("abandons client: a poll failed; giving up without cancel or close", "statement", op.Ref.StatementID, "err", err)
	}
}

// closeFails: the statement finishes, the client fetches, and its
// CloseOperation is lost to a connection reset; the failure is swallowed
// and the session stays pooled, so the finished operation stays open.
func (w *workload) closeFails(ctx context.Context, wh string) {
	c, _, op, err := w.start(ctx, KindCloseFails, wh, "carol@example.com", "databricks-sql-go 1.5.2",
		fmt.Sprintf("SELECT count(*) FROM web.sessions WHERE session_date = current_date() - %d", 1+w.intn(30)),
		4*time.Second, "")
	if err != nil {
		w.debug("close_fails client could not start", "warehouse", wh, "err", err)
		return
	}
	if st, err := w.pollUntilDone(ctx, c, op.Ref, w.d(time.Second)); err == nil && st.State == "FINISHED" {
		_, _ = c.FetchResults(ctx, op.Ref, 10000)
	}
	if err := c.CloseOperation(ctx, op.Ref); err != nil {
		w.debug("close_fails client: CloseOperation failed; swallowed", "statement", op.Ref.StatementID, "err", err)
	}
}

// givesUp (through the proxy): a 10-minute statement whose client stops
// polling after 5 s on its own side (its own timeout): no error for the
// proxy to heal, no cancel, no close. Only the client's silence tells.
func (w *workload) givesUp(ctx context.Context, wh string) {
	c, _, op, err := w.start(ctx, KindGivesUp+viaProxy, wh, "dave@example.com", "Databricks JDBC",
		fmt.Sprintf("SELECT * FROM finance.ledger l JOIN finance.accounts a ON l.account_id = a.id WHERE l.posted_date > '2026-%02d-01'", 1+w.intn(12)),
		10*time.Minute, "")
	if err != nil {
		w.debug("gives_up client could not start", "warehouse", wh, "err", err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, w.d(5*time.Second))
	defer cancel()
	_, _ = w.pollUntilDone(pctx, c, op.Ref, w.d(time.Second))
	w.debug("gives_up client: stopped following after its own 5 s timeout; no cancel, no close", "statement", op.Ref.StatementID)
}

// closeFailsProxied (through the proxy): the statement finishes and the
// server refuses its CloseOperation for 30 s (scripted), longer than the
// proxy's healing: the client gets the error and swallows it, the proxy
// queues the close and closes it once the server accepts.
func (w *workload) closeFailsProxied(ctx context.Context, wh string) {
	c, _, op, err := w.start(ctx, KindCloseFailsProxied+viaProxy, wh, "erin@example.com", "databricks-sql-go",
		fmt.Sprintf("SELECT sku, sum(qty) FROM inventory.movements WHERE day = current_date() - %d GROUP BY sku", 1+w.intn(30)),
		4*time.Second, "")
	if err != nil {
		w.debug("close_fails_proxied client could not start", "warehouse", wh, "err", err)
		return
	}
	if st, err := w.pollUntilDone(ctx, c, op.Ref, w.d(time.Second)); err == nil && st.State == "FINISHED" {
		_, _ = c.FetchResults(ctx, op.Ref, 10000)
	}
	if err := c.CloseOperation(ctx, op.Ref); err != nil {
		w.debug("close_fails_proxied client: CloseOperation failed; swallowed", "statement", op.Ref.StatementID, "err", err)
	}
}

// leaksProxied (through the proxy): the statement finishes, the client
// fetches and never closes the operation; its pool closes the session
// 60 s later (CloseSession closes the operation), before the server's
// leak reaper would. Meanwhile the proxy saw the handle and no close: the
// operation is open on its evidence (UNCLOSED without the lenient
// Statement Execution API).
func (w *workload) leaksProxied(ctx context.Context, wh string) {
	c, sess, op, err := w.start(ctx, KindLeaksProxied+viaProxy, wh, "frank@example.com", "Databricks JDBC 2.6.40",
		fmt.Sprintf("SELECT region, sum(amount) FROM sales.refunds WHERE month = %d GROUP BY region", 1+w.intn(12)),
		4*time.Second, "")
	if err != nil {
		w.debug("leaks_proxied client could not start", "warehouse", wh, "err", err)
		return
	}
	if st, err := w.pollUntilDone(ctx, c, op.Ref, w.d(time.Second)); err == nil && st.State == "FINISHED" {
		_, _ = c.FetchResults(ctx, op.Ref, 10000)
	}
	if !sleep(ctx, w.d(60*time.Second)) {
		return
	}
	w.bestEffort(ctx, func(ctx context.Context) error { return c.CloseSession(ctx, sess) })
}

func (w *workload) bestEffort(ctx context.Context, f func(context.Context) error) {
	if ctx.Err() != nil {
		// Shutting down: the server is going away with everything in it.
		return
	}
	_ = f(ctx)
}

// debug reports what a scripted client did or suffered, at debug: the
// workload's clients fail on purpose.
func (w *workload) debug(msg string, attrs ...any) {
	w.s.o.Logger.Debug("sim workload: "+msg, attrs...)
}

// ingest upserts batches into one index of IngestEndpoint every second
// until the endpoint answers RESOURCE_EXHAUSTED (full in about a minute).
func (w *workload) ingest(ctx context.Context) {
	const index = "main.support.tickets_idx"
	ep, _ := w.s.vec.endpoint(IngestEndpoint)
	// Fill what is left in ~58 s of timeline. Batches are sized by the
	// time that really passed, so a slow machine sends bigger batches
	// rather than falling behind the documented timeline.
	rate := float64(ep.Limit-ep.Rows) / 58 // rows per timeline second
	hc := &http.Client{Transport: w.tr, Timeout: 30 * time.Second}
	next := int64(1_000_000)
	if !sleep(ctx, w.d(2*time.Second)) {
		return
	}
	last := time.Now().Add(-w.d(time.Second))
	for {
		now := time.Now()
		batch := int(rate * now.Sub(last).Seconds() * w.speed)
		last = now
		batch = max(1, min(batch, 10_000)) // bounded: big bodies would slow the next round further
		base := w.s.url
		if w.s.proxyURL != "" {
			// With the embedded proxy, the bulk of the fill stays
			// in-process and the last WriterOverHTTP of it (and the
			// refusal) are real requests through the proxy.
			if cur, _ := w.s.vec.endpoint(IngestEndpoint); float64(cur.Limit-cur.Rows)/rate > WriterOverHTTP.Seconds() {
				w.s.vec.upsert(index, int64(batch), func(string) bool { return false })
				if !sleep(ctx, w.d(time.Second)) {
					return
				}
				continue
			}
			base = w.s.proxyURL
		}
		var b strings.Builder
		b.WriteByte('[')
		for i := 0; i < batch; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"id":`)
			b.WriteString(strconv.FormatInt(next, 10))
			b.WriteString(`,"text":"ticket"}`)
			next++
		}
		b.WriteByte(']')
		body, _ := json.Marshal(map[string]string{"inputs_json": b.String()})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost,
			base+"/api/2.0/vector-search/indexes/"+index+"/upsert-data", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+w.s.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", SimClientUA(KindIngest))
		resp, err := hc.Do(req)
		if err == nil {
			rb, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests && bytes.Contains(rb, []byte("RESOURCE_EXHAUSTED")) {
				w.debug("ingest client: the endpoint is full; stopping", "endpoint", IngestEndpoint, "answer", strings.TrimSpace(string(rb)))
				return
			}
		}
		if !sleep(ctx, w.d(time.Second)) {
			return
		}
	}
}

// demoRules are the demo's scripted faults.
func (w *workload) demoRules() []rule {
	whs := w.s.WarehouseIDs()
	outageWH := whs[0]
	from, to := w.d(40*time.Second), w.d(65*time.Second)
	return []rule{
		func(ci *callInfo, r *http.Request, body []byte) string {
			switch kindFromUA(ci.ua) {
			case KindAbandons:
				if ci.call == "GetOperationStatus" {
					return FaultReset
				}
			case KindCloseFails:
				if ci.call == "CloseOperation" {
					return FaultReset
				}
			}
			return ""
		},
		func(ci *callInfo, r *http.Request, body []byte) string {
			// The observer's outage: its Thrift calls to warehouse 0, its
			// Statement Execution API calls on warehouse 0's statements
			// (where a status poll falls back to when Thrift refuses a
			// rebuilt handle) and its query-history requests (which would
			// otherwise confirm warehouse 0's operations in batches), so
			// STALE shows.
			if !ci.observer {
				return ""
			}
			if t := w.s.o.Clock.Now().Sub(w.s.started); t < from || t >= to {
				return ""
			}
			switch {
			case ci.call == "ListQueries",
				r.PathValue("stmt") == "" && ci.warehouse == outageWH,
				r.PathValue("stmt") != "" && w.s.statementWarehouse(r.PathValue("stmt")) == outageWH:
				return FaultUnavailable
			}
			return ""
		},
		func(ci *callInfo, r *http.Request, body []byte) string {
			// Every close of a proxied close_fails operation (the client's,
			// the proxy's, dbxtop's) is refused for 30 s after the first.
			if ci.call != "CloseOperation" {
				return ""
			}
			if g, ok := closeTarget(r.Context(), body); ok && w.s.closeRefused(g, w.d(30*time.Second)) {
				return FaultUnavailable
			}
			return ""
		},
		func(ci *callInfo, r *http.Request, body []byte) string {
			if !ci.observer || ci.call != "CloseOperation" {
				return ""
			}
			if g, ok := closeTarget(r.Context(), body); ok && w.s.scriptedObserverCloseFails(g) {
				return FaultUnavailable
			}
			return ""
		},
	}
}

// closeTarget decodes the operation GUID of a CloseOperation request.
func closeTarget(ctx context.Context, body []byte) (guid, bool) {
	p := thrift.NewReadProtocol(body)
	if _, _, _, err := p.ReadMessageBegin(ctx); err != nil {
		return guid{}, false
	}
	args := tc.NewTCLIServiceCloseOperationArgs()
	if err := args.Read(ctx, p); err != nil {
		return guid{}, false
	}
	return opGUID(args.GetReq().GetOperationHandle())
}

// scriptedObserverCloseFails is true for the observer closes of each
// close_fails operation in the demo during observerCloseFailFor after the
// first one, so CLOSE_FAILED shows when the operator re-closes one: the
// observer's immediate retries fail too, and its queued retry later
// succeeds.
const observerCloseFailFor = 20 * time.Second

func (s *Server) scriptedObserverCloseFails(g guid) bool {
	if s.o.Scenario != ScenarioDemo {
		return false
	}
	fail := false
	s.store.withOp(g, false, func(op *operation, now time.Time) {
		if op.kind != KindCloseFails || !op.open {
			return
		}
		if op.observerCloseFailUntil.IsZero() {
			op.observerCloseFailUntil = now.Add(time.Duration(float64(observerCloseFailFor) / s.o.Speed))
		}
		fail = now.Before(op.observerCloseFailUntil)
	})
	return fail
}

// closeRefused is true while closes of a proxied close_fails operation are
// refused: for d from its first close.
func (s *Server) closeRefused(g guid, d time.Duration) bool {
	refused := false
	s.store.withOp(g, false, func(op *operation, now time.Time) {
		if op.kind != KindCloseFailsProxied || !op.open {
			return
		}
		if op.closeRefusedUntil.IsZero() {
			op.closeRefusedUntil = now.Add(d)
		}
		refused = now.Before(op.closeRefusedUntil)
	})
	return refused
}

// ---- load -------------------------------------------------------------------

// load keeps Ops long-running healthy operations, each polled by its own
// client every LoadPoll (20 s: enough to stay active, cheap on CPU), each
// replaced by a new one when it ends after LoadRun.
func (w *workload) load(ctx context.Context) {
	n := w.s.o.Ops
	whs := w.s.WarehouseIDs()
	for i := 0; i < n; i++ {
		delay := w.d(time.Duration(i) * 20 * time.Second / time.Duration(max(n, 1)))
		wh := whs[i%len(whs)]
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if !sleep(ctx, delay) {
				return
			}
			for ctx.Err() == nil {
				w.longRunning(ctx, wh, i)
			}
		}()
	}
}

func (w *workload) longRunning(ctx context.Context, wh string, i int) {
	sql := fmt.Sprintf("SELECT * FROM streaming.events_%d WHERE ingest_time > now() - INTERVAL 1 DAY", i)
	c, sess, op, err := w.start(ctx, KindHealthy, wh, demoUsers[i%len(demoUsers)], demoApps[i%len(demoApps)], sql, w.s.o.LoadRun, "")
	if err != nil {
		sleep(ctx, w.d(5*time.Second)) // the server may be faulted: come back later
		return
	}
	defer w.bestEffort(ctx, func(ctx context.Context) error { return c.CloseSession(ctx, sess) })
	for {
		_, err := w.pollUntilDone(ctx, c, op.Ref, w.d(w.s.o.LoadPoll))
		if err == nil || ctx.Err() != nil || errors.Is(err, sources.ErrHandleGone) {
			break
		}
	}
	w.bestEffort(ctx, func(ctx context.Context) error { return c.CloseOperation(ctx, op.Ref) })
}
