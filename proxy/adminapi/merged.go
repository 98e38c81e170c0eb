package adminapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// MaxProxies bounds the proxies one workspace reads: each is a `proxy`
// label value of serve's metrics, so a discovery that lists more (a
// runaway file_sd file) is cut, with an error naming how many were left.
const MaxProxies = 64

// Target is one proxy to read: its admin URL and token.
type Target struct {
	URL   string
	Token string
	// ServerName is the name to verify an https proxy's certificate
	// against when URL holds an address a name resolved to ("": URL's).
	ServerName string
	// Err says why this target cannot be read (its token file, say): it
	// is listed, and shown down with this reason.
	Err error
}

// Targets lists the proxies to read, asked once per refresh: a fixed
// list (--proxy, proxies = […]), or a discovery that re-resolves a name
// or re-reads a file. An error with targets is a partial answer (some
// specs resolved): those are read and the error reported.
type Targets interface {
	Targets(ctx context.Context) ([]Target, error)
}

// StaticTargets is a fixed list of proxies.
type StaticTargets []Target

// Targets returns the list.
func (s StaticTargets) Targets(context.Context) ([]Target, error) { return s, nil }

// Merged adds the facts of one or several proxies to dbxtop's sources:
// discovery gains the open operations only a proxy saw, each status
// carries the proxies' account merged by operation (the latest client
// call from any, every close outcome, which proxies saw it), and close and
// cancel of an operation a proxy saw go through one that saw it, which
// holds the real handle. A proxy that does not answer keeps what it last
// said with the reason it is not current; what only it saw turns unknown,
// never OK. It implements sources.Discoverer, StatusSource, ActionSource,
// ProxyLister and IdleCloser.
type Merged struct {
	targets Targets
	ua      string
	disc    sources.Discoverer
	status  sources.StatusSource
	actions sources.ActionSource
	now     func() time.Time

	mu      sync.Mutex
	members map[string]*member // by admin URL
	facts   map[string]*merged // by statement id
}

// member is one proxy read: its client and what it said last.
type member struct {
	name  string // host:port, its label
	url   string
	token string
	// serverName is the target's ServerName.
	serverName string
	admin      *AdminClient
	badURL     error // the target could not become a client

	up       bool
	read     bool // answered at least once
	reason   string
	since    time.Time // when it stopped answering
	lastOK   time.Time
	version  string
	upstream string
	facts    map[string]sources.ProxyOperation
}

// merged is one operation's facts from every proxy that saw it.
type merged struct {
	f      sources.ProxyOperation
	seenBy []string // proxy names, sorted
	// via are the proxies to act through, best first: those that saw its
	// start (the real handle from ExecuteStatement's answer), then by the
	// client's latest call.
	via []*member
	// unknown is why part of the account is not current ("" when every
	// proxy that saw it answered); onlyDown: none that saw it answered.
	unknown  string
	onlyDown bool
}

// Merge wraps dbxtop's sources with one proxy's facts.
func Merge(admin *AdminClient, disc sources.Discoverer, status sources.StatusSource, actions sources.ActionSource) *Merged {
	m := MergeAll(StaticTargets{{URL: admin.URL(), Token: admin.token}}, admin.ua, disc, status, actions)
	m.members[admin.URL()] = m.newMember(Target{URL: admin.URL(), Token: admin.token}, admin, nil)
	return m
}

// MergeAll wraps dbxtop's sources with the facts of the proxies targets
// lists at each refresh; ua is the User-Agent of the admin API calls.
func MergeAll(targets Targets, ua string, disc sources.Discoverer, status sources.StatusSource, actions sources.ActionSource) *Merged {
	return &Merged{targets: targets, ua: ua, disc: disc, status: status, actions: actions, now: time.Now,
		members: map[string]*member{}, facts: map[string]*merged{}}
}

func (m *Merged) newMember(t Target, admin *AdminClient, err error) *member {
	name := t.URL
	if admin != nil {
		name = admin.base.Host
	}
	if admin == nil {
		if u, perr := url.Parse(t.URL); perr == nil && u.Host != "" {
			name = u.Host
		}
	}
	return &member{name: Clean(sources.Redact(name)), url: t.URL, token: t.Token, serverName: t.ServerName, admin: admin, badURL: err,
		facts: map[string]sources.ProxyOperation{}}
}

// sync makes the members those targets lists: new ones get a client,
// those no longer listed are dropped with their facts (and their series).
func (m *Merged) sync(ts []Target) (list []*member, cut int) {
	seen := map[string]bool{}
	var keep []Target
	for _, t := range ts {
		if seen[t.URL] {
			continue
		}
		seen[t.URL] = true
		keep = append(keep, t)
	}
	if len(keep) > MaxProxies {
		cut = len(keep) - MaxProxies
		keep = keep[:MaxProxies]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[string]bool{}
	for _, t := range keep {
		want[t.URL] = true
		if old, ok := m.members[t.URL]; ok && old.token == t.Token && old.serverName == t.ServerName && (old.badURL == nil) == (t.Err == nil) {
			list = append(list, old)
			continue
		} else if ok && old.admin != nil {
			old.admin.CloseIdleConnections()
		}
		var admin *AdminClient
		err := t.Err
		if err == nil {
			admin, err = NewAdminClient(t.URL, t.Token, m.ua)
		}
		if admin != nil && t.ServerName != "" {
			admin.verifyAs(t.ServerName)
		}
		mb := m.newMember(t, admin, err)
		m.members[t.URL] = mb
		list = append(list, mb)
	}
	for u, mb := range m.members {
		if !want[u] {
			if mb.admin != nil {
				mb.admin.CloseIdleConnections()
			}
			delete(m.members, u)
		}
	}
	return list, cut
}

// Discover lists dbxtop's discovery plus what only the proxies saw, with
// their merged account on every operation one of them saw. Each proxy's
// facts are read once per discovery (through the caller's retry), all at
// once; a proxy that fails keeps its last facts, marked not current, and
// its failure is reported in a *sources.PartialError (nothing silent).
func (m *Merged) Discover(ctx context.Context, retry sources.Retry) ([]sources.Discovered, error) {
	ds, err := m.disc.Discover(ctx, retry)
	var partial *sources.PartialError
	if err != nil && !errors.As(err, &partial) {
		return nil, err
	}
	addErr := func(err error) {
		if partial == nil {
			partial = &sources.PartialError{}
		}
		partial.Errs = append(partial.Errs, err)
	}
	ts, terr := m.targets.Targets(ctx)
	if terr != nil {
		addErr(fmt.Errorf("finding the dbxtop proxies: %w", terr))
	}
	var list []*member
	if terr != nil && len(ts) == 0 {
		// Discovery failed outright: keep reading the proxies known.
		m.mu.Lock()
		for _, mb := range m.members {
			list = append(list, mb)
		}
		m.mu.Unlock()
	} else {
		var cut int
		list, cut = m.sync(ts)
		if cut > 0 {
			addErr(fmt.Errorf("%d dbxtop proxies found beyond the first %d were left out: narrow the discovery", cut, MaxProxies))
		}
	}
	if len(list) == 0 && terr == nil {
		addErr(errors.New("no dbxtop proxy found: the discovery listed none"))
	}
	errs := m.readAll(ctx, retry, list)
	for _, e := range errs {
		addErr(e)
	}
	byID := m.merge()
	listed := make(map[string]bool, len(ds))
	for i := range ds {
		id := ds[i].Op.StatementID
		if id == "" {
			id = ds[i].Ref.StatementID
		}
		listed[id] = true
		if f, ok := byID[id]; ok {
			overlay(&ds[i].Op, f)
		}
	}
	for id, f := range byID {
		if listed[id] || (f.f.Close.Outcome != sources.ProxyOpen && f.f.Close.Outcome != sources.ProxyCloseFailed) {
			continue
		}
		// Only a proxy saw it (another warehouse, or query history lags):
		// followed like any other. Its state is left unknown here: what a
		// proxy last relayed is not a confirmation by dbxtop.
		op := model.Operation{StatementID: id, WarehouseID: f.f.WarehouseID,
			ClientApplication: f.f.ClientApplication, StartedAt: f.f.StartedAt}
		overlay(&op, f)
		ds = append(ds, sources.Discovered{Op: op, Ref: sources.Ref{StatementID: id, WarehouseID: f.f.WarehouseID}})
	}
	if partial != nil {
		return ds, partial
	}
	return ds, nil
}

// readAll reads every member's facts and health at once and records the
// outcome on each; it returns the failures.
func (m *Merged) readAll(ctx context.Context, retry sources.Retry, list []*member) []error {
	type result struct {
		facts  []sources.ProxyOperation
		err    error
		health *Health
	}
	res := make([]result, len(list))
	var wg sync.WaitGroup
	for i, mb := range list {
		if mb.admin == nil {
			res[i].err = mb.badURL
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &res[i]
			r.err = retry(ctx, "ProxyOperations", func(ctx context.Context) error {
				var err error
				r.facts, err = mb.admin.Operations(ctx)
				return err
			})
			if r.err == nil {
				// The version is the health endpoint's: one attempt, no
				// retry (it only labels the proxy).
				hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				h, err := mb.admin.Health(hctx)
				cancel()
				if err == nil {
					r.health = &h
				}
			}
		}()
	}
	wg.Wait()
	now := m.now()
	var errs []error
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, mb := range list {
		r := res[i]
		if r.err != nil {
			if mb.up || !mb.read && mb.since.IsZero() {
				mb.since = now
			}
			mb.up, mb.reason = false, Clean(r.err.Error())
			errs = append(errs, fmt.Errorf("proxy %s: %w", mb.name, r.err))
			continue
		}
		mb.up, mb.read, mb.reason, mb.since, mb.lastOK = true, true, "", time.Time{}, now
		mb.facts = make(map[string]sources.ProxyOperation, len(r.facts))
		for _, f := range r.facts {
			mb.facts[f.StatementID] = f
		}
		if h := r.health; h != nil {
			mb.version, mb.upstream = Clean(h.Version), Clean(h.Status)
		}
	}
	return errs
}

// merge rebuilds the merged facts from every member's (those of a member
// that failed as it last answered) and returns them.
func (m *Merged) merge() map[string]*merged {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]*member, 0, len(m.members))
	for _, mb := range m.members {
		names = append(names, mb)
	}
	slices.SortFunc(names, func(a, b *member) int { return cmp.Compare(a.name, b.name) })
	type part struct {
		mb *member
		f  sources.ProxyOperation
	}
	parts := map[string][]part{}
	for _, mb := range names {
		for id, f := range mb.facts {
			parts[id] = append(parts[id], part{mb, f})
		}
	}
	out := make(map[string]*merged, len(parts))
	for id, ps := range parts {
		fs := make([]sources.ProxyOperation, len(ps))
		mg := &merged{onlyDown: true}
		var down []string
		for i, p := range ps {
			fs[i] = p.f
			mg.seenBy = append(mg.seenBy, p.mb.name)
			if p.mb.up {
				mg.onlyDown = false
			} else {
				down = append(down, fmt.Sprintf("%s (not answering since %s: %s; its part is as of %s)", p.mb.name,
					p.mb.since.UTC().Format("15:04:05"), p.mb.reason, stamp(p.mb.lastOK)))
			}
		}
		if len(ps) > 1 {
			for i, p := range ps {
				fs[i].Actions = slices.Clone(fs[i].Actions) // the member's own stay as read
				for j := range fs[i].Actions {
					fs[i].Actions[j].Message = "via " + p.mb.name + ": " + fs[i].Actions[j].Message
				}
			}
		}
		mg.f = mergeFacts(fs)
		if len(down) > 0 {
			mg.unknown = "proxy " + strings.Join(down, "; ")
		}
		// Act through a proxy that saw its start first (the handle came
		// from ExecuteStatement's answer), then the latest to see a call.
		order := slices.Clone(ps)
		slices.SortStableFunc(order, func(a, b part) int {
			if a.f.LearnedAfterStart != b.f.LearnedAfterStart {
				if !a.f.LearnedAfterStart {
					return -1
				}
				return 1
			}
			return b.f.LastClientActivity().Compare(a.f.LastClientActivity())
		})
		for _, p := range order {
			mg.via = append(mg.via, p.mb)
		}
		out[id] = mg
	}
	m.facts = out
	return out
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("15:04:05")
}

// closeRank orders close outcomes for the merge: a close that succeeded
// anywhere wins over open, a failed close over open; unobserved says least.
func closeRank(o string) int {
	switch o {
	case sources.ProxyClosed, sources.ProxyClosedByProxy, sources.ProxyClosedByServer:
		return 4
	case sources.ProxyGone:
		return 3
	case sources.ProxyCloseFailed:
		return 2
	case sources.ProxyOpen:
		return 1
	}
	return 0
}

// mergeFacts merges what several proxies saw of one operation (fs, in
// proxy name order): the latest client call from any, the close outcome
// that says most (a success anywhere wins; a client's failed close stays
// in the account), attempts, heals and actions of all.
func mergeFacts(fs []sources.ProxyOperation) sources.ProxyOperation {
	out := fs[0]
	out.Actions = nil
	out.Close = sources.ProxyClose{}
	out.Heals = 0
	out.LearnedAfterStart = true
	best := -1
	for _, f := range fs {
		if out.SessionID == "" {
			out.SessionID = f.SessionID
		}
		if out.HTTPPath == "" {
			out.HTTPPath = f.HTTPPath
		}
		if out.WarehouseID == "" {
			out.WarehouseID = f.WarehouseID
		}
		if out.ClientApplication == "" {
			out.ClientApplication = f.ClientApplication
		}
		if out.UserAgent == "" {
			out.UserAgent = f.UserAgent
		}
		if !f.StartedAt.IsZero() && (out.StartedAt.IsZero() || f.StartedAt.Before(out.StartedAt)) {
			out.StartedAt = f.StartedAt
		}
		if f.LastClientRPCAt.After(out.LastClientRPCAt) {
			out.LastClientRPCAt = f.LastClientRPCAt
		}
		if f.SessionLastClientRPCAt.After(out.SessionLastClientRPCAt) {
			out.SessionLastClientRPCAt = f.SessionLastClientRPCAt
		}
		// The state furthest along: an end any proxy relayed is the end.
		if f.State.Terminal() && !out.State.Terminal() || out.State == "" || out.State == model.StateUnknown {
			out.State = f.State
		}
		out.LearnedAfterStart = out.LearnedAfterStart && f.LearnedAfterStart
		if out.Unobserved == "" {
			out.Unobserved = f.Unobserved
		}
		out.Heals += f.Heals
		out.Actions = append(out.Actions, f.Actions...)
		c := f.Close
		out.Close.ClientAttempts += c.ClientAttempts
		out.Close.ProxyAttempts += c.ProxyAttempts
		if out.Close.ClientError == nil {
			out.Close.ClientError = c.ClientError
		}
		if c.Queued {
			out.Close.Queued = true
			if !c.NextTry.IsZero() && (out.Close.NextTry.IsZero() || c.NextTry.Before(out.Close.NextTry)) {
				out.Close.NextTry = c.NextTry
			}
		}
		if r := closeRank(c.Outcome); r > best {
			best, out.Close.Outcome = r, c.Outcome
			if c.LastError != nil || out.Close.LastError == nil {
				out.Close.LastError = c.LastError
			}
		}
	}
	if closeRank(out.Close.Outcome) >= 3 {
		// Closed somewhere: nothing is queued any more.
		out.Close.Queued, out.Close.NextTry = false, time.Time{}
	}
	slices.SortStableFunc(out.Actions, func(a, b sources.ProxyEvent) int { return a.At.Compare(b.At) })
	return out
}

// overlay puts the proxies' facts on an operation dbxtop is about to
// follow. Client activity only a proxy that does not answer saw is left
// out: it may have moved on since.
func overlay(op *model.Operation, mg *merged) {
	op.Proxy = mg.account()
	if t := mg.f.LastClientActivity(); !t.IsZero() && !op.ClientActivityKnown && !mg.onlyDown {
		op.ClientActivityKnown, op.ClientLastActivity = true, t
	}
}

func (mg *merged) account() *model.ProxyAccount {
	a := Account(mg.f)
	a.SeenBy, a.Unknown = slices.Clone(mg.seenBy), mg.unknown
	return a
}

func (m *Merged) fact(id string) (*merged, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.facts[id]
	return f, ok
}

// Status is dbxtop's status call with the proxies' account added. The
// client's last call comes from the proxies unless the server itself said
// (only the simulator's opt-in extension does). When no proxy that saw
// the operation answers, its client activity and a proxy's proof that it
// is open become unknown, with the reason: the client may have called
// since, and a close may have happened, where dbxtop cannot see.
func (m *Merged) Status(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	st, err := m.status.Status(ctx, ref)
	if err != nil {
		return st, err
	}
	mg, ok := m.fact(ref.StatementID)
	if !ok {
		return st, nil
	}
	f := mg.f
	st.Proxy = mg.account()
	if mg.onlyDown {
		if st.ClientLastActivity == nil {
			st.ClientActivityUnknown = true
			st.Note = sources.JoinNotes(st.Note, "client activity unknown: "+mg.unknown)
		}
	} else if t := f.LastClientActivity(); st.ClientLastActivity == nil && !t.IsZero() {
		st.ClientLastActivity = &t
	}
	switch f.Close.Outcome {
	case sources.ProxyClosed, sources.ProxyClosedByServer, sources.ProxyClosedByProxy, sources.ProxyGone:
		// A close is for good: what a proxy saw of it holds even when the
		// proxy no longer answers.
		if st.Open == nil {
			closed := false
			st.Open = &closed
		}
	case sources.ProxyOpen, sources.ProxyCloseFailed:
		why, proven := provenOpen(f)
		switch {
		case !proven || st.Open != nil || st.State == model.StateClosed:
		case mg.onlyDown:
			st.OpenUnknown = true
		default:
			// The proof, not the server's answer: the poller ages it
			// (the proxy cannot see the server's reaper).
			open := true
			st.Open, st.OpenByProxy = &open, true
			st.Note = sources.JoinNotes(st.Note, why)
		}
	}
	return st, nil
}

// ErrNoProxyAnswers: every proxy that saw the operation failed to answer
// its last read, so no action goes through one.
var ErrNoProxyAnswers = errors.New("no dbxtop proxy that saw the operation answers")

// act runs an action through the proxies that saw the operation, best
// first, until one answers; a gone handle is an answer. Its error names
// every proxy tried. Without any that answers it fails clearly rather
// than act with a handle that lacks its secret.
func (m *Merged) act(ctx context.Context, mg *merged, ref sources.Ref, call string, do func(*AdminClient, context.Context, string) error) error {
	m.mu.Lock()
	var cands []*member
	var down []string
	for _, mb := range mg.via {
		if cur, ok := m.members[mb.url]; !ok || cur != mb || mb.admin == nil {
			down = append(down, mb.name+" (no longer listed)")
		} else if !mb.up {
			down = append(down, mb.name+" ("+mb.reason+")")
		} else {
			cands = append(cands, mb)
		}
	}
	m.mu.Unlock()
	if len(cands) == 0 {
		return fmt.Errorf("%s %s: %w: %s; retry once one of them is back", call, ref.StatementID, ErrNoProxyAnswers, strings.Join(down, "; "))
	}
	var errs []string
	for _, mb := range cands {
		err := do(mb.admin, ctx, ref.StatementID)
		if err == nil || errors.Is(err, sources.ErrHandleGone) || ctx.Err() != nil || len(cands) == 1 {
			return err
		}
		errs = append(errs, mb.name+": "+err.Error())
	}
	return fmt.Errorf("%s %s: every proxy that saw it failed: %s", call, ref.StatementID, strings.Join(errs, "; "))
}

// Close closes through a proxy that saw the operation (the real handle),
// else with dbxtop's own source.
func (m *Merged) Close(ctx context.Context, ref sources.Ref) error {
	if mg, ok := m.fact(ref.StatementID); ok {
		return m.act(ctx, mg, ref, "CloseOperation", (*AdminClient).Close)
	}
	if m.actions == nil {
		return errors.New("no action source")
	}
	return m.actions.Close(ctx, ref)
}

// Cancel cancels through a proxy that saw the operation.
func (m *Merged) Cancel(ctx context.Context, ref sources.Ref) error {
	if mg, ok := m.fact(ref.StatementID); ok {
		return m.act(ctx, mg, ref, "CancelOperation", (*AdminClient).Cancel)
	}
	if m.actions == nil {
		return errors.New("no action source")
	}
	return m.actions.Cancel(ctx, ref)
}

// ActionCalls names the calls made for ref (sources.ActionNamer): a
// proxy's CancelOperation/CloseOperation with the real handle, or those
// of dbxtop's own action source.
func (m *Merged) ActionCalls(ref sources.Ref) (cancel, close string) {
	if _, ok := m.fact(ref.StatementID); ok {
		return "CancelOperation", "CloseOperation"
	}
	if n, ok := m.actions.(sources.ActionNamer); ok {
		return n.ActionCalls(ref)
	}
	return "CancelOperation", "CloseOperation"
}

// ProxyStatuses says how each proxy fared at its last read, by name.
func (m *Merged) ProxyStatuses() []model.ProxyStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]model.ProxyStatus, 0, len(m.members))
	for _, mb := range m.members {
		ps := model.ProxyStatus{Name: mb.name, Up: mb.up, Reason: mb.reason, Version: mb.version,
			Upstream: mb.upstream, LastOK: mb.lastOK, Operations: len(mb.facts)}
		if !mb.up && ps.Reason == "" {
			ps.Reason = "not read yet"
		}
		out = append(out, ps)
	}
	slices.SortFunc(out, func(a, b model.ProxyStatus) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// CloseIdleConnections drops the admin clients' pooled connections.
func (m *Merged) CloseIdleConnections() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mb := range m.members {
		if mb.admin != nil {
			mb.admin.CloseIdleConnections()
		}
	}
}

// maxHealthBody bounds a /v1/health answer.
const maxHealthBody = 64 << 10

// Health reads the proxy's /v1/health (no token needed; a 503 still
// carries its document).
func (c *AdminClient) Health(ctx context.Context) (Health, error) {
	var h Health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+PathHealth, nil)
	if err != nil {
		return h, err
	}
	req.Header.Set("User-Agent", c.ua)
	resp, err := c.hc.Do(req)
	if err != nil {
		return h, fmt.Errorf("proxy admin API ProxyHealth: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthBody))
	if err != nil {
		return h, fmt.Errorf("proxy admin API ProxyHealth: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		return h, sources.ParseHTTPError("ProxyHealth", resp.StatusCode, resp.Header, body)
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return h, fmt.Errorf("proxy admin API ProxyHealth: not the health JSON: %w", err)
	}
	h.Status, h.Version, h.UpstreamReason = Clean(h.Status), Clean(h.Version), Clean(h.UpstreamReason)
	return h, nil
}
