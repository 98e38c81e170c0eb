package model

import "time"

// Evidence is what dbxtop believes about an operation, fact by fact, with
// the source that said it and when dbxtop last heard it (docs/model.md,
// "Evidence"): its state, whether it is open, when its client last acted
// and whether it is gone. It is derived from the operation's own fields,
// so it cannot disagree with them; snapshot JSON carries it as an
// addition (`evidence`).
type Evidence struct {
	State, Open, ClientActivity, Gone Fact
}

// Fact is one belief: Source is who said it (a StatusVia* value, or
// EvidenceViaProxy), At when dbxtop last heard it; Source "" means
// nothing said it (unknown).
type Fact struct {
	Source string
	At     time.Time
}

// EvidenceViaProxy: what `dbxtop proxy` saw on the wire. Its word ages
// (a proxy cannot see the server's reapers): see PossiblyReaped and
// Operation.OpenByProxy.
const EvidenceViaProxy = "proxy"

// EvidenceViaStatus: a status answer whose source did not name the call.
const EvidenceViaStatus = "status"

// statusSource is StatusSource, or EvidenceViaStatus when unnamed.
func statusSource(op *Operation) string {
	if op.StatusSource == "" {
		return EvidenceViaStatus
	}
	return op.StatusSource
}

// EvidenceOf is op's evidence. The rules, once:
//
//   - state: the call that last confirmed it (StatusSource) when
//     LastPollOKAt is set; the proxy's account when only a proxy has
//     spoken for it; else nothing (a listing's first word is not a
//     confirmation);
//   - open: the proxy when OpenByProxy, else the source that last
//     confirmed the state; nothing while openness is unknown;
//   - client activity: the proxy when the activity is the proxy's
//     account of the client's last call, else the status source;
//   - gone: the source whose answer ended it.
func EvidenceOf(op *Operation) Evidence {
	var ev Evidence
	switch {
	case !op.LastPollOKAt.IsZero():
		ev.State = Fact{statusSource(op), op.LastPollOKAt}
	case op.Proxy != nil:
		ev.State = Fact{EvidenceViaProxy, op.Proxy.LastClientRPC}
	}
	if op.Open != nil {
		switch {
		case op.OpenByProxy:
			ev.Open = Fact{EvidenceViaProxy, op.LastPollOKAt}
		case ev.State.Source != "":
			ev.Open = ev.State
		}
	}
	if op.ClientActivityKnown && !op.ClientLastActivity.IsZero() {
		src := statusSource(op)
		if op.Proxy != nil && op.Proxy.LastClientRPC.Equal(op.ClientLastActivity) {
			src = EvidenceViaProxy
		}
		ev.ClientActivity = Fact{src, op.ClientLastActivity}
	}
	if op.Gone {
		ev.Gone = Fact{statusSource(op), op.LastPollOKAt}
	}
	return ev
}

type factWire struct {
	Source string   `json:"source"`
	At     jsonTime `json:"at"`
}

type evidenceWire struct {
	State          *factWire `json:"state"`
	Open           *factWire `json:"open"`
	ClientActivity *factWire `json:"client_activity"`
	Gone           *factWire `json:"gone"`
}

func (f Fact) wire() *factWire {
	if f.Source == "" && f.At.IsZero() {
		return nil
	}
	return &factWire{Source: f.Source, At: jsonTime{f.At}}
}

func (e Evidence) wire() *evidenceWire {
	return &evidenceWire{State: e.State.wire(), Open: e.Open.wire(), ClientActivity: e.ClientActivity.wire(), Gone: e.Gone.wire()}
}
