package model

import (
	"fmt"
	"time"

	"github.com/dbxtop/dbxtop/textfmt"
)

// ProxyAccount is what `dbxtop proxy` saw of an operation on the wire
// between its client and the server (docs/proxy.md): evidence no server
// API gives. Nil when no proxy saw the operation.
type ProxyAccount struct {
	// LastClientRPC is the later of the client's last call on the
	// operation and on its session.
	LastClientRPC time.Time
	// CloseOutcome: open, closed, closed_by_server, close_failed,
	// closed_by_proxy or gone.
	CloseOutcome        string
	ClientCloseAttempts int
	ProxyCloseAttempts  int
	// ClientCloseError is the error the client's own CloseOperation got.
	ClientCloseError *ErrorInfo
	// LastCloseError is the latest close error, the client's or the proxy's.
	LastCloseError *ErrorInfo
	// NextTry is when the proxy's close queue tries again (zero: nothing queued).
	NextTry time.Time
	Heals   int
	// Actions are the proxy's own actions, oldest first, as one line each.
	Actions []string
}

// ProxyCloseFailed is the outcome of a client close that failed upstream.
const ProxyCloseFailed = "close_failed"

// clientCloseFailedFlag: the owning client's own close failed, as the
// proxy saw it; the proxy's queue retries it.
func clientCloseFailedFlag(p *ProxyAccount, now time.Time) Flag {
	d := fmt.Sprintf("the client's close failed (seen by the proxy; %s by the client, %d by the proxy)",
		textfmt.Plural(int64(p.ClientCloseAttempts), "attempt", "attempts"), p.ProxyCloseAttempts)
	if p.ClientCloseError != nil {
		d += ": " + p.ClientCloseError.String()
	}
	if !p.NextTry.IsZero() {
		d += "; the proxy retries in " + textfmt.Duration(max(p.NextTry.Sub(now), 0))
	}
	return Flag{Kind: FlagCloseFailed, Severity: SeverityCritical, Detail: d}
}

type proxyWire struct {
	LastClientRPCAt     jsonTime   `json:"last_client_rpc_at"`
	CloseOutcome        string     `json:"close_outcome"`
	ClientCloseAttempts int        `json:"client_close_attempts"`
	ProxyCloseAttempts  int        `json:"proxy_close_attempts"`
	ClientCloseError    *ErrorInfo `json:"client_close_error"`
	LastCloseError      *ErrorInfo `json:"last_close_error"`
	NextTryAt           jsonTime   `json:"next_try_at"`
	Heals               int        `json:"heals"`
	Actions             []string   `json:"actions"`
}

func (p *ProxyAccount) wire() *proxyWire {
	if p == nil {
		return nil
	}
	return &proxyWire{LastClientRPCAt: jsonTime{p.LastClientRPC}, CloseOutcome: p.CloseOutcome,
		ClientCloseAttempts: p.ClientCloseAttempts, ProxyCloseAttempts: p.ProxyCloseAttempts,
		ClientCloseError: p.ClientCloseError, LastCloseError: p.LastCloseError,
		NextTryAt: jsonTime{p.NextTry}, Heals: p.Heals, Actions: nonNil(p.Actions)}
}

func (w *proxyWire) account() *ProxyAccount {
	if w == nil {
		return nil
	}
	// Decoded from a peer: its text is cleaned here (errors clean their own).
	return &ProxyAccount{LastClientRPC: w.LastClientRPCAt.Time, CloseOutcome: textfmt.Line(w.CloseOutcome),
		ClientCloseAttempts: w.ClientCloseAttempts, ProxyCloseAttempts: w.ProxyCloseAttempts,
		ClientCloseError: w.ClientCloseError, LastCloseError: w.LastCloseError,
		NextTry: w.NextTryAt.Time, Heals: w.Heals, Actions: nilIfEmpty(lines(w.Actions))}
}
