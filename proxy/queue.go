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

	"github.com/dbxtop/dbxtop/model"
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
func (p *Proxy) creds(ctx context.Context, o *op) (context.Context, string, error) {
	if p.o.ActAs == ActAsProxy {
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
	now := p.clk.Now()
	type job struct {
		o   *op
		why string
	}
	var jobs []job
	p.st.mu.Lock()
	p.st.age(now)
	p.logEvictions()
	for _, o := range p.st.due(now) {
		if !o.open() {
			continue
		}
		if o.busy {
			p.st.arm(o, now.Add(p.o.Tick))
			continue
		}
		if o.queued {
			if o.f.Close.NextTry.After(now) {
				p.st.arm(o, o.f.Close.NextTry)
				continue
			}
			jobs = append(jobs, job{o, ""})
			continue
		}
		if p.o.CloseAbandoned <= 0 {
			continue
		}
		if why, next := p.abandonEvidence(o, now); why == "" {
			p.st.arm(o, next)
		} else {
			jobs = append(jobs, job{o, why})
		}
	}
	for _, j := range jobs {
		j.o.busy = true
	}
	p.st.mu.Unlock()
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

// abandonEvidence says why o is abandoned, or "" and when to look again.
// Abandoned means: nothing in flight on it or its session, its last
// answer reached the client whole, and the client silent for the whole
// window, or, with result pages left or an answer cut off (a slow
// reader), for the server's own idle timeout. Called with the store
// locked.
func (p *Proxy) abandonEvidence(o *op, now time.Time) (string, time.Time) {
	if o.busyOnWire() {
		return "", now.Add(p.o.CloseAbandoned)
	}
	last := o.lastActivity()
	window := p.o.CloseAbandoned
	pending := ""
	switch {
	case o.moreRows:
		pending = "; result pages were left to fetch, so the window is the server's idle timeout"
	case o.undelivered:
		pending = "; its last answer did not reach the client whole, so the window is the server's idle timeout"
	}
	if pending != "" && p.o.ServerIdleTimeout > window {
		window = p.o.ServerIdleTimeout
	}
	if due := last.Add(window); due.After(now) {
		return "", due
	}
	return fmt.Sprintf("abandoned: no request in flight, no client call on the operation or its session for %s (--close-abandoned %s%s)",
		textfmt.Duration(now.Sub(last)), p.o.CloseAbandoned, pending), time.Time{}
}

func (p *Proxy) release(o *op) {
	p.st.mu.Lock()
	o.busy = false
	p.st.mu.Unlock()
}

// closeOwn makes one policy-wrapped close of o with the best credentials
// and records the outcome; a failure is (re)queued with the close queue's
// backoff. who says why: "queue", "abandoned", "dbxtop".
func (p *Proxy) closeOwn(ctx context.Context, o *op, who string) error {
	p.st.mu.Lock()
	cctx, cred, cerr := p.creds(ctx, o)
	ref := o.ref()
	p.st.mu.Unlock()
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
	now := p.clk.Now()
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	o.f.Close.ProxyAttempts += attempts
	switch {
	case err == nil:
		o.closedByProxy = true
		p.st.setClosed(o, sources.ProxyClosedByProxy, now)
		p.stats.closedByProxy.Add(1)
		o.event(now, "closed", "closed by the proxy ("+who+")", cred)
		p.log.Info("closed by the proxy", "statement_id", o.f.StatementID, "by", who, "credentials", cred, "attempts", attempts)
		return nil
	case errors.Is(err, sources.ErrHandleGone):
		p.markGone(o)
		o.event(now, "gone", "the server no longer has the operation ("+who+")", cred)
		p.log.Info("operation gone", "statement_id", o.f.StatementID, "by", who, "credentials", cred)
		return nil
	case ctx.Err() != nil:
		if o.queued {
			p.st.arm(o, o.f.Close.NextTry)
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
	p.st.setQueued(o, true)
	o.f.Close.NextTry = now.Add(retry.CloseRetryWait(o.closeFails, rand.Float64()))
	p.st.arm(o, o.f.Close.NextTry)
	o.event(now, "close-failed", fmt.Sprintf("close by the proxy (%s) failed: %s; next try at %s", who, info.Message, o.f.Close.NextTry.UTC().Format(time.RFC3339)), cred)
	p.log.Warn("close by the proxy failed", "statement_id", o.f.StatementID, "by", who, "credentials", cred,
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
	p.st.mu.Lock()
	cctx, cred, cerr := p.creds(ctx, o)
	ref := o.ref()
	o.event(p.clk.Now(), "abandoned", why, cred)
	p.st.mu.Unlock()
	p.log.Warn("abandoned operation", "statement_id", ref.StatementID, "evidence", why, "credentials", cred)
	if cerr != nil {
		p.st.mu.Lock()
		o.event(p.clk.Now(), "abandoned", "no action: "+cerr.Error(), "")
		// Not retried every tick: the next look is after another period.
		p.st.arm(o, p.clk.Now().Add(p.o.CloseAbandoned))
		p.st.mu.Unlock()
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
		p.st.mu.Lock()
		p.markGone(o)
		p.st.mu.Unlock()
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
		p.st.mu.Lock()
		msg := "canceled by the proxy (abandoned)"
		if cerr != nil {
			msg = "cancel by the proxy failed: " + clean(retry.ErrorInfoOf(cerr).Message)
		} else if o.open() {
			o.f.State = model.StateCanceled
		}
		o.event(p.clk.Now(), "canceled", msg, cred)
		p.st.mu.Unlock()
		p.log.Info("abandoned operation cancel", "statement_id", ref.StatementID, "result", msg, "credentials", cred)
	} else if err == nil {
		p.st.mu.Lock()
		if o.open() {
			o.f.State = st.State
		}
		p.st.mu.Unlock()
	}
	_ = p.closeOwn(ctx, o, "abandoned")
}

// Close closes a proxied operation for dbxtop with its real handle (the
// admin API's POST …/close); a failure is queued like a client's.
func (p *Proxy) Close(ctx context.Context, statementID string) error {
	o, err := p.claim(statementID)
	if err != nil {
		return err
	}
	defer p.release(o)
	return p.closeOwn(ctx, o, "dbxtop")
}

// Cancel cancels a proxied operation for dbxtop with its real handle.
func (p *Proxy) Cancel(ctx context.Context, statementID string) error {
	p.st.mu.Lock()
	o := p.st.ops[statementID]
	if o == nil {
		p.st.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownOperation, idText(statementID))
	}
	cctx, cred, cerr := p.creds(ctx, o)
	ref := o.ref()
	p.st.mu.Unlock()
	if cerr != nil {
		return cerr
	}
	err := p.pol.Do(cctx, retry.Call{Name: "CancelOperation", Safe: true, OpID: ref.StatementID}, func(actx context.Context) error {
		if err := p.gated("CancelOperation", ref); err != nil {
			return err
		}
		p.stats.ownCalls.Add(1)
		return p.own.CancelOperation(actx, ref)
	})
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	msg := "canceled for dbxtop"
	if err != nil {
		msg = "cancel for dbxtop failed: " + clean(retry.ErrorInfoOf(err).Message)
	}
	o.event(p.clk.Now(), "canceled", msg, cred)
	return err
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

// claim marks o busy for a dbxtop action (waiting for a queue attempt in
// flight would block the operator; refusing says why).
func (p *Proxy) claim(id string) (*op, error) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	o := p.st.ops[id]
	if o == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownOperation, idText(id))
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
