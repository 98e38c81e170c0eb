package proxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// ErrNoCredentials: the proxy holds no credentials it may act with on
// this operation (--act-as).
var ErrNoCredentials = errors.New("no credentials to act with")

// ErrUnknownOperation: the proxy never saw this operation.
var ErrUnknownOperation = errors.New("the proxy has not seen this operation")

type credKey struct{}

// ownAuth signs the proxy's own calls: with the client's Authorization
// header when the call carries it (--act-as client), else with the
// workspace credentials (--act-as proxy).
func (p *Proxy) ownAuth(r *http.Request) error {
	if a, _ := r.Context().Value(credKey{}).(string); a != "" {
		r.Header.Set("Authorization", a)
		return nil
	}
	if p.o.ActAs == ActAsProxy && p.o.Authenticate != nil {
		return p.o.Authenticate(r)
	}
	return ErrNoCredentials
}

// creds picks the credentials of an own call on o per --act-as: the
// owning client's (those the server last accepted on its session or on
// the operation), or the proxy's. Called with the store locked.
func (s *store) creds(ctx context.Context, o *op) (context.Context, string, error) {
	if s.o.ActAs == ActAsProxy {
		return ctx, "proxy", nil
	}
	auth := o.auth
	if o.sess != nil {
		auth = o.sess.auth
	}
	if auth == "" {
		return ctx, "", fmt.Errorf("%w: the owning client's session is closed or its credentials are gone (--act-as client; --act-as proxy uses the proxy's own)", ErrNoCredentials)
	}
	return context.WithValue(ctx, credKey{}, auth), "client", nil
}

func (o *op) ref() sources.Ref {
	return sources.Ref{StatementID: o.f.StatementID, WarehouseID: o.f.HTTPPath, Secret: o.secret}
}

// tick ages out finished operations and runs what is due: queued closes
// and, with --close-abandoned, the abandonment look of operations whose
// window may have passed (a heap: only those are touched). Each action
// runs in its own goroutine, bounded by ownSem, never under the store's
// lock; an operation is never acted on twice at once.
func (p *Proxy) tick(ctx context.Context) {
	jobs := p.st.jobs(p.clk.Now())
	for _, j := range jobs {
		select {
		case p.ownSem <- struct{}{}:
		case <-ctx.Done():
			p.release(j.o)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.ownSem }()
			defer p.release(j.o)
			if j.why == "" {
				_ = p.closeOwn(ctx, j.o, "queue")
			} else {
				p.abandon(ctx, j.o, j.why)
			}
		}()
	}
}

// job is an own action due on an operation: a queued close (why "") or
// an abandonment (why says the evidence).
type job struct {
	o   *op
	why string
}

// jobsLocked ages the table and takes what is due, marking each busy.
// Called with the store locked.
func (s *store) jobsLocked(now time.Time) []job {
	var jobs []job
	s.age(now)
	s.logEvictions()
	for _, o := range s.due(now) {
		if !o.open() {
			continue
		}
		if o.busy {
			s.arm(o, now.Add(s.o.Tick))
			continue
		}
		if o.queued {
			if o.f.Close.NextTry.After(now) {
				s.arm(o, o.f.Close.NextTry)
				continue
			}
			jobs = append(jobs, job{o, ""})
			continue
		}
		if s.o.CloseAbandoned <= 0 {
			continue
		}
		if why, next := s.abandonEvidence(o, now); why == "" {
			s.arm(o, next)
		} else {
			jobs = append(jobs, job{o, why})
		}
	}
	for _, j := range jobs {
		j.o.busy = true
	}
	return jobs
}

// abandonEvidence says why o is abandoned, or "" and when to look again.
// Abandoned means: nothing in flight on it or its session, its last
// answer reached the client whole, and the client silent for the whole
// window, or, with result pages left or an answer cut off (a slow
// reader), for the server's own idle timeout. Called with the store
// locked.
func (s *store) abandonEvidence(o *op, now time.Time) (string, time.Time) {
	if o.busyOnWire() {
		return "", now.Add(s.o.CloseAbandoned)
	}
	last := o.lastActivity()
	window := s.o.CloseAbandoned
	pending := ""
	switch {
	case o.moreRows:
		pending = "; result pages were left to fetch, so the window is the server's idle timeout"
	case o.undelivered:
		pending = "; its last answer did not reach the client whole, so the window is the server's idle timeout"
	}
	if pending != "" && s.o.ServerIdleTimeout > window {
		window = s.o.ServerIdleTimeout
	}
	if due := last.Add(window); due.After(now) {
		return "", due
	}
	return fmt.Sprintf("abandoned: no request in flight, no client call on the operation or its session for %s (--close-abandoned %s%s)",
		textfmt.Duration(now.Sub(last)), s.o.CloseAbandoned, pending), time.Time{}
}

func (p *Proxy) release(o *op) { p.st.release(o) }

// closeOwn makes one policy-wrapped close of o with the best credentials
// and records the outcome; a failure is (re)queued with the close queue's
// backoff. who says why: "queue", "abandoned", "dbxtop".
func (p *Proxy) closeOwn(ctx context.Context, o *op, who string) error {
	cctx, cred, ref, cerr := p.st.prepare(ctx, o)
	var err error
	attempts := 0
	if cerr == nil {
		err = p.pol.Do(cctx, retry.Call{Name: "CloseOperation", Safe: true, OpID: ref.StatementID}, func(actx context.Context) error {
			attempts++
			if err := p.gated("CloseOperation", ref); err != nil {
				return err
			}
			p.stats.ownCalls.Add(1)
			return p.own.CloseOperation(actx, ref)
		})
	} else {
		err = cerr
	}
	return p.st.closed(o, who, cred, attempts, err, ctx.Err() != nil)
}

// closedLocked records the outcome of the proxy's own close of o (err;
// canceled: the proxy is stopping); a failure is (re)queued with the
// close queue's backoff. Called with the store locked.
func (s *store) closedLocked(o *op, who, cred string, attempts int, err error, canceled bool) error {
	now := s.clk.Now()
	o.f.Close.ProxyAttempts += attempts
	switch {
	case err == nil:
		o.closedByProxy = true
		s.setClosed(o, sources.ProxyClosedByProxy, now)
		s.stats.closedByProxy.Add(1)
		o.event(now, "closed", "closed by the proxy ("+who+")", cred)
		s.log.Info("closed by the proxy", "statement_id", o.f.StatementID, "by", who, "credentials", cred, "attempts", attempts)
		return nil
	case errors.Is(err, sources.ErrHandleGone):
		s.markGone(o)
		o.event(now, "gone", "the server no longer has the operation ("+who+")", cred)
		s.log.Info("operation gone", "statement_id", o.f.StatementID, "by", who, "credentials", cred)
		return nil
	case canceled:
		if o.queued {
			s.arm(o, o.f.Close.NextTry)
		}
		return err
	}
	info := cleanInfo(retry.ErrorInfoOf(err))
	o.f.Close.LastError = info
	o.closeFails++
	if o.f.Close.Outcome == sources.ProxyOpen {
		o.f.Close.Outcome = sources.ProxyCloseFailed
	}
	if !o.open() {
		return err
	}
	s.setQueued(o, true)
	o.f.Close.NextTry = now.Add(retry.CloseRetryWait(o.closeFails, rand.Float64()))
	s.arm(o, o.f.Close.NextTry)
	o.event(now, "close-failed", fmt.Sprintf("close by the proxy (%s) failed: %s; next try at %s", who, info.Message, o.f.Close.NextTry.UTC().Format(time.RFC3339)), cred)
	s.log.Warn("close by the proxy failed", "statement_id", o.f.StatementID, "by", who, "credentials", cred,
		"attempts", attempts, "cause", info.Message, "next_try", o.f.Close.NextTry.UTC())
	return err
}

// abandon acts on an operation its client left: a status call first (with
// the real handle), then close when terminal, or cancel and close when
// running.
func (p *Proxy) abandon(ctx context.Context, o *op, why string) {
	if !p.mayAbandon(ctx, o) { // peers.go: the other replicas' evidence
		return
	}
	p.stats.abandonActions.Add(1)
	cctx, cred, ref, cerr := p.st.prepare(ctx, o)
	p.st.event(o, "abandoned", why, cred)
	p.log.Warn("abandoned operation", "statement_id", ref.StatementID, "evidence", why, "credentials", cred)
	if cerr != nil {
		// Not retried every tick: the next look is after another period.
		p.st.noAction(o, "abandoned", cerr)
		p.log.Warn("abandoned operation not closed", "statement_id", ref.StatementID, "reason", cerr.Error())
		return
	}
	st, err := retry.Do(cctx, p.pol, retry.Call{Name: "GetOperationStatus", Safe: true, OpID: ref.StatementID},
		func(actx context.Context) (sources.Status, error) {
			if err := p.gated("GetOperationStatus", ref); err != nil {
				return sources.Status{}, err
			}
			p.stats.ownCalls.Add(1)
			return p.own.GetOperationStatus(actx, ref)
		})
	if errors.Is(err, sources.ErrHandleGone) {
		p.st.gone(o)
		return
	}
	if err == nil && st.State.Live() {
		cerr := p.pol.Do(cctx, retry.Call{Name: "CancelOperation", Safe: true, OpID: ref.StatementID}, func(actx context.Context) error {
			if err := p.gated("CancelOperation", ref); err != nil {
				return err
			}
			p.stats.ownCalls.Add(1)
			return p.own.CancelOperation(actx, ref)
		})
		msg := "canceled by the proxy (abandoned)"
		if cerr != nil {
			msg = "cancel by the proxy failed: " + clean(retry.ErrorInfoOf(cerr).Message)
		}
		p.st.canceled(o, cerr == nil, msg, cred)
		p.log.Info("abandoned operation cancel", "statement_id", ref.StatementID, "result", msg, "credentials", cred)
	} else if err == nil {
		p.st.relayState(o, st.State)
	}
	_ = p.closeOwn(ctx, o, "abandoned")
}

// Close closes a proxied operation for dbxtop with its real handle (the
// admin API's POST …/close); a failure is queued like a client's.
func (p *Proxy) Close(ctx context.Context, statementID string) error {
	o, err := p.st.claim(statementID)
	if err != nil {
		return err
	}
	defer p.release(o)
	return p.closeOwn(ctx, o, "dbxtop")
}

// Cancel cancels a proxied operation for dbxtop with its real handle.
func (p *Proxy) Cancel(ctx context.Context, statementID string) error {
	o, err := p.st.lookup(statementID)
	if err != nil {
		return err
	}
	cctx, cred, ref, cerr := p.st.prepare(ctx, o)
	if cerr != nil {
		return cerr
	}
	err = p.pol.Do(cctx, retry.Call{Name: "CancelOperation", Safe: true, OpID: ref.StatementID}, func(actx context.Context) error {
		if err := p.gated("CancelOperation", ref); err != nil {
			return err
		}
		p.stats.ownCalls.Add(1)
		return p.own.CancelOperation(actx, ref)
	})
	msg := "canceled for dbxtop"
	if err != nil {
		msg = "cancel for dbxtop failed: " + clean(retry.ErrorInfoOf(err).Message)
	}
	p.st.event(o, "canceled", msg, cred)
	return err
}

// actionable finds the operation a dbxtop action names: an error when
// the proxy does not hold it, or holds it folded (closed cleanly: the
// server confirmed the close, so nothing is sent). Called with the store
// locked.
func (s *store) actionable(id string) (*op, error) {
	if o := s.ops[id]; o != nil {
		return o, nil
	}
	if f := s.folds.get(id); f != nil {
		return nil, errFolded(f)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownOperation, idText(id))
}

// maxIDText bounds an id a caller gave that goes back in an answer or a
// log line: a statement id is 36 characters.
const maxIDText = 64

// idText is a caller-given id made safe to repeat: cleaned, and cut to
// maxIDText bytes.
func idText(id string) string {
	id = clean(id)
	if len(id) <= maxIDText {
		return id
	}
	id = id[:maxIDText]
	for !utf8.ValidString(id) {
		id = id[:len(id)-1]
	}
	return id + "…"
}

// claimLocked marks o busy for a dbxtop action (waiting for a queue
// attempt in flight would block the operator; refusing says why). Called
// with the store locked.
func (s *store) claimLocked(id string) (*op, error) {
	o, err := s.actionable(id)
	if err != nil {
		return nil, err
	}
	if o.busy {
		return nil, fmt.Errorf("a close of %s by the proxy is already in flight", id)
	}
	o.busy = true
	return o, nil
}

// gated refuses an own Thrift call to a warehouse the gate does not know
// to be running (the refusal is an error like any failed call: a close is
// queued again with backoff and says why).
func (p *Proxy) gated(call string, ref sources.Ref) error {
	if p.o.Gate == nil {
		return nil
	}
	id := ref.WarehouseID
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:] // the operation's HTTP path, /sql/1.0/warehouses/<id>
	}
	if ok, why := p.o.Gate.Running(id); !ok {
		return sources.NotRunningError(call, why)
	}
	return nil
}
