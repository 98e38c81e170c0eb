package poller

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/poller/retry"
	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/textfmt"
)

// What dbxtop believes about an ended operation's openness, and how long
// it keeps asking: the ledger's rules (docs/model.md, "Evidence"). The
// methods here without a lock of their own run under the ledger's, from
// its writers:
//
//   - it is asked while UNCLOSED could still matter, counted from when
//     dbxtop first could ask (askFrom: the later of its end and when
//     dbxtop first saw it), never from its end alone: an operation that
//     ended long before dbxtop started is asked at least once, so an old
//     leak is flagged on the first round that can know it;
//   - "cannot tell" is an answer: a poll that says nothing about
//     openness (ErrHandleUnverified, a failure, or a state without
//     openness) counts as an ask; asks come on a doubling backoff from
//     pollTerminal, openAsksOnBackoff of them, then at most one per
//     openAskEvery, until the window closes; then the operation is
//     retired with its openness shown unknown (`?`) and the reason;
//   - an operation known open is polled until it is closed or gone,
//     and one dbxtop must close (adopted, queued) until its close ends.
const (
	openAsksOnBackoff = 5
	openAskEvery      = 10 * time.Minute
)

// askFrom is when dbxtop first could ask whether en is open: the later of
// its end and when dbxtop first saw it.
func askFrom(en *entry) time.Time {
	t := unstamp(en.terminalAt)
	if f := en.op.FirstSeenAt; f.After(t) {
		t = f
	}
	return t
}

// openWindow is how long after askFrom an ended operation of unknown
// openness is asked: past it, UNCLOSED is critical for any leak (five
// times --leak-after), so an answer would only confirm what an earlier
// one could have said.
func (l *ledger) openWindow() time.Duration { return 5*l.th.LeakAfter + time.Minute }

// unknownOpen: en ended, whether it is open is unknown, and it is not
// dbxtop's own to close.
func unknownOpen(en *entry) bool {
	op := &en.op
	return en.terminal && op.State.Terminal() && op.Open == nil && !op.Gone && !en.queued && !op.Adopted
}

// answered records one poll's answer in en's ask count: an answer
// that could not tell (see above) counts, one that told resets it
// (after the answer was applied).
func (l *ledger) answered(en *entry, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if unknownOpen(en) || (err != nil && errors.Is(err, sources.ErrHandleUnverified)) {
		if en.asks < ^uint16(0) {
			en.asks++
		}
		return
	}
	en.asks = 0
}

// openAskWait is the wait before the next ask after asks answers in a row
// that could not tell (asks >= 1).
func openAskWait(asks uint16) time.Duration {
	if asks >= openAsksOnBackoff {
		return openAskEvery
	}
	return pollTerminal << (asks - 1)
}

// pastOpenWindow: en's openness is unknown and the window in which it is
// asked has closed.
func (l *ledger) pastOpenWindow(en *entry, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return unknownOpen(en) && now.Sub(askFrom(en)) >= l.openWindow()
}

// nextAsk bounds the wait before en's next poll by the ask rules: on the
// backoff after answers that could not tell, and never past the window's
// end, so that the last ask comes when it closes. ok is false when the
// rules do not apply.
func (l *ledger) nextAsk(en *entry, now time.Time, err error) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if en.asks == 0 {
		return 0, false
	}
	wait := openAskWait(en.asks)
	if unknownOpen(en) {
		if end := askFrom(en).Add(l.openWindow()); end.Before(now.Add(wait)) {
			wait = max(end.Sub(now), 0)
		}
		return wait, true
	}
	return wait, err != nil && errors.Is(err, sources.ErrHandleUnverified)
}

// retireUnknown stops asking about an ended operation no source could
// tell about: it stays, shown open `?`, with the reason. The caller takes
// it off the poll schedule.
func (l *ledger) retireUnknown(en *entry, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	op := &en.op
	op.StatusNote = sources.JoinNotes(op.StatusNote, fmt.Sprintf(
		"whether it is open is unknown: no source could tell in %s over %s since dbxtop could first ask; no longer asked",
		textfmt.Plural(int64(en.asks), "ask", "asks"), textfmt.Duration(now.Sub(askFrom(en)))))
	l.ops.retire(en, now)
}

// ageProxyOpen ages a proxy's proof that an ended operation is open
// (sources.Status.OpenByProxy): the proxy relayed its handle and saw no
// close, but it cannot see the server's reaper of ended operations, so
// the proof holds until that reaper could act: --server-leak-timeout
// after the later of the end and the owner's last call the proxy relayed
// on the operation or its session. Past it, openness is unknown and the
// note says why. A live operation's proof does not age here (the
// inactivity reaper's rule is model.PossiblyReaped).
func (l *ledger) ageProxyOpen(en *entry, st *sources.Status, now time.Time) {
	if !st.OpenByProxy || st.Open == nil || !*st.Open {
		return
	}
	op := &en.op
	end := st.CompletedAt
	if end.IsZero() {
		end = op.CompletedAt
	}
	if !st.State.Terminal() && !op.State.Terminal() {
		return
	}
	th := l.th.WithDefaults()
	if st.Proxy != nil && !st.Proxy.LastClientRPC.IsZero() && !end.IsZero() && end.Sub(st.Proxy.LastClientRPC) >= th.ServerIdleTimeout {
		// It ended after its client was idle past the inactivity reaper,
		// which closes what it reaps: no proof.
		st.Open, st.OpenUnknown = nil, true
		st.Note = sources.JoinNotes(st.Note, fmt.Sprintf("the proxy saw no close, but it ended %s after its client's last call, "+
			"past the server's inactivity reaper (--server-idle-timeout %s), which closes what it reaps; whether it is open is unknown",
			textfmt.Duration(end.Sub(st.Proxy.LastClientRPC)), textfmt.Duration(th.ServerIdleTimeout)))
		return
	}
	from := end
	if st.Proxy != nil && st.Proxy.LastClientRPC.After(from) {
		from = st.Proxy.LastClientRPC
	}
	if from.IsZero() {
		from = unstamp(en.terminalAt)
	}
	leak := th.ServerLeakTimeout
	if now.Sub(from) < leak {
		return
	}
	st.Open, st.OpenUnknown = nil, true
	st.Note = sources.JoinNotes(st.Note, fmt.Sprintf("open per dbxtop proxy until %s: it relayed the server's handle and saw no close, "+
		"but the server's reaper of ended operations (--server-leak-timeout %s) may have closed it since, unseen by the proxy; whether it is open is unknown",
		from.Add(leak).UTC().Format("15:04:05"), textfmt.Duration(leak)))
}

// ageHeldProxyOpen ages a proxy's proof that an earlier answer gave when
// this one carries none (the proxy restarted, or the call failed): it
// holds no longer than one the proxy still gives.
func (l *ledger) ageHeldProxyOpen(en *entry, now time.Time) {
	op := &en.op
	if !op.OpenByProxy || op.Open == nil || !*op.Open {
		return
	}
	held := sources.Status{State: op.State, CompletedAt: op.CompletedAt, Open: op.Open, OpenByProxy: true, Proxy: op.Proxy}
	l.ageProxyOpen(en, &held, now)
	if held.OpenUnknown {
		op.Open, op.OpenByProxy = nil, false
		op.StatusNote = sources.JoinNotes(op.StatusNote, held.Note)
	}
}

// apply records one successful status answer and returns the state it
// replaced.
func (l *ledger) apply(en *entry, st sources.Status, now time.Time, round uint64) (prev model.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	op := &en.op
	prev = op.State
	if st.State != "" {
		op.State = st.State
	}
	if !st.StartedAt.IsZero() {
		op.StartedAt = st.StartedAt
	}
	if !st.CompletedAt.IsZero() {
		op.CompletedAt = st.CompletedAt
	}
	if st.ErrorMessage != "" {
		op.ServerError = st.ErrorMessage
	}
	if st.ClientLastActivity != nil {
		op.ClientActivityKnown, op.ClientLastActivity = true, *st.ClientLastActivity
	}
	l.ageProxyOpen(en, &st, now)
	if st.Open != nil {
		op.Open, op.OpenByProxy = boolRef(*st.Open), st.OpenByProxy
	} else if st.OpenUnknown {
		op.Open, op.OpenByProxy = nil, false
	}
	if st.Proxy != nil {
		op.Proxy = st.Proxy
	}
	op.LastPollOKAt = now
	en.readRound = round
	op.Poll.OK++
	op.LastError = nil
	op.StatusSource, op.StatusNote = st.Source, st.Note
	markTerminal(en, now)
	if st.Open == nil && !st.OpenUnknown {
		l.ageHeldProxyOpen(en, now)
	}
	return prev
}

// gone records that the server no longer has en, with the final state
// the evidence gave (Engine.settleGone): never still RUNNING. The
// server's answer confirms its fate, so it counts as a read status when
// the final state was settled; a failed settle is the row's reason. It
// returns the state it replaced and whether en was gone already.
func (l *ledger) gone(en *entry, st sources.Status, settleErr error, now time.Time, round uint64) (prev model.State, was bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	op := &en.op
	prev, was = op.State, op.Gone
	if st.State != "" {
		op.State = st.State
	}
	if !st.CompletedAt.IsZero() {
		op.CompletedAt = st.CompletedAt
	}
	if st.ErrorMessage != "" {
		op.ServerError = st.ErrorMessage
	}
	op.StatusSource, op.StatusNote = st.Source, st.Note
	if settleErr != nil {
		op.LastError = retry.ErrorInfoOf(settleErr)
		op.Poll.Failed++
	} else {
		op.LastPollOKAt = now
		en.readRound = round
		op.LastError = nil
	}
	op.Gone = true
	op.Open, op.OpenByProxy = boolRef(false), false
	return prev, was
}

// failed records a status poll that failed: the reason, a proxy's proof
// aged without the proxy's word, and a proxy's "running" that the
// inactivity reaper may have ended.
func (l *ledger) failed(en *entry, info *model.ErrorInfo, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	en.op.Poll.Failed++
	en.op.LastError = info
	l.ageHeldProxyOpen(en, now)
	l.notePossiblyReaped(en, now)
}

// listedState gives en a listing's state (and end) while no poll has
// answered yet: query history's word replaces a proxy's "running".
func (l *ledger) listedState(en *entry, d *model.Operation, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := &en.op
	if !o.LastPollOKAt.IsZero() || d.State == "" || o.State == d.State {
		return
	}
	l.views.touch(en)
	o.State = d.State
	if o.CompletedAt.IsZero() {
		o.CompletedAt = d.CompletedAt
	}
	if strings.HasPrefix(o.StatusNote, possiblyReapedNote) {
		o.StatusNote = "" // history's word replaces the proxy's
	}
	markTerminal(en, now)
}

// listedEnd records the end a listing gave before any answer: it counts
// for the ask rules.
func (l *ledger) listedEnd(en *entry, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	markTerminal(en, now)
}

// proxySaw records what a proxy saw of en on the wire (a listing row of
// proxy.Merge): its account, and the owning client's last call, which no
// server tells.
func (l *ledger) proxySaw(en *entry, d *model.Operation, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views.touch(en)
	o := &en.op
	o.Proxy = d.Proxy
	if d.ClientActivityKnown && d.ClientLastActivity.After(o.ClientLastActivity) {
		o.ClientActivityKnown, o.ClientLastActivity = true, d.ClientLastActivity
	}
	l.notePossiblyReaped(en, now)
}

// possiblyReapedNote starts the status note of an operation only a
// proxy's aged account says runs (model.PossiblyReaped).
const possiblyReapedNote = "possibly reaped"

// notePossiblyReaped says so in en's status note when only a proxy's
// account, older than the server's inactivity reaper, says it runs: it
// is shown without INACTIVE or STALE (model.PossiblyReaped), and query
// history's end, when it comes, replaces the note with its own answer.
func (l *ledger) notePossiblyReaped(en *entry, now time.Time) {
	op := &en.op
	th := l.th.WithDefaults()
	if !model.PossiblyReaped(op, now, th) || strings.HasPrefix(op.StatusNote, possiblyReapedNote) {
		return
	}
	l.views.touch(en)
	op.StatusNote = fmt.Sprintf("%s: only dbxtop proxy says it runs; its client made no call since %s, longer than "+
		"the server's inactivity reaper (--server-idle-timeout %s), and no server source has confirmed it since",
		possiblyReapedNote, op.ClientLastActivity.UTC().Format("15:04:05"), textfmt.Duration(th.ServerIdleTimeout))
}
