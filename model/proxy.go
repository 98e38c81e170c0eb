package model

import (
	"encoding/json"
	"fmt"
	"strings"
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
	// SeenBy names the proxies (host:port) whose admin API reported the
	// operation, sorted; several when a load balancer spread its calls.
	SeenBy []string
	// Unknown says why part of this account is not current: a proxy that
	// saw the operation does not answer, so what it saw since its last
	// answer is unknown ("" when every proxy that saw it answered).
	Unknown string
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
	SeenBy              []string   `json:"seen_by,omitempty"`
	Unknown             string     `json:"unknown,omitempty"`
}

func (p *ProxyAccount) wire() *proxyWire {
	if p == nil {
		return nil
	}
	return &proxyWire{LastClientRPCAt: jsonTime{p.LastClientRPC}, CloseOutcome: p.CloseOutcome,
		ClientCloseAttempts: p.ClientCloseAttempts, ProxyCloseAttempts: p.ProxyCloseAttempts,
		ClientCloseError: p.ClientCloseError, LastCloseError: p.LastCloseError,
		NextTryAt: jsonTime{p.NextTry}, Heals: p.Heals, Actions: nonNil(p.Actions),
		SeenBy: p.SeenBy, Unknown: p.Unknown}
}

func (w *proxyWire) account() *ProxyAccount {
	if w == nil {
		return nil
	}
	// Decoded from a peer: its text is cleaned here (errors clean their own).
	return &ProxyAccount{LastClientRPC: w.LastClientRPCAt.Time, CloseOutcome: textfmt.Line(w.CloseOutcome),
		ClientCloseAttempts: w.ClientCloseAttempts, ProxyCloseAttempts: w.ProxyCloseAttempts,
		ClientCloseError: w.ClientCloseError, LastCloseError: w.LastCloseError,
		NextTry: w.NextTryAt.Time, Heals: w.Heals, Actions: nilIfEmpty(lines(w.Actions)),
		SeenBy: nilIfEmpty(lines(w.SeenBy)), Unknown: textfmt.Line(w.Unknown)}
}

// ProxyStatus is one `dbxtop proxy` a workspace reads (--proxy, proxies,
// discovery): whether its admin API answered the last refresh, and the
// version its health endpoint reported.
type ProxyStatus struct {
	// Name is the proxy's host:port: its label (no scheme, path or token).
	Name string `json:"name"`
	// Up: its admin API answered the last refresh.
	Up bool `json:"up"`
	// Reason says why it is not up (the call's error), "" when up.
	Reason string `json:"reason,omitempty"`
	// Version is what its /v1/health said ("" until it answered once).
	Version string `json:"version"`
	// Upstream is its health's status: "ok", "upstream_unreachable" or
	// "" when unknown.
	Upstream string `json:"upstream,omitempty"`
	// LastOK is when its admin API last answered (zero: never).
	LastOK time.Time `json:"last_ok"`
	// Operations counts the operations its last answer held.
	Operations int `json:"operations"`
	// Workspace names the watched workspace (its context) when several
	// are watched; "" otherwise.
	Workspace string `json:"workspace,omitempty"`
}

// ProxyVersionSkew says which versions the proxies that answered run,
// when they differ ("" when they agree or fewer than two answered):
// replicas of different versions may disagree on what they record.
func ProxyVersionSkew(ps []ProxyStatus) string {
	seen := map[string][]string{}
	var order []string
	for _, p := range ps {
		if p.Version == "" {
			continue
		}
		if _, ok := seen[p.Version]; !ok {
			order = append(order, p.Version)
		}
		seen[p.Version] = append(seen[p.Version], p.Name)
	}
	if len(order) < 2 {
		return ""
	}
	s := "proxy versions differ:"
	for i, v := range order {
		if i > 0 {
			s += ";"
		}
		s += fmt.Sprintf(" %s on %s", v, strings.Join(seen[v], ", "))
	}
	return s
}

// proxyStatusWire is ProxyStatus in the snapshot JSON: last_ok is null
// until the proxy answered, as every time of the snapshot.
type proxyStatusWire struct {
	Name       string   `json:"name"`
	Up         bool     `json:"up"`
	Reason     string   `json:"reason,omitempty"`
	Version    string   `json:"version"`
	Upstream   string   `json:"upstream,omitempty"`
	LastOK     jsonTime `json:"last_ok"`
	Operations int      `json:"operations"`
	Workspace  string   `json:"workspace,omitempty"`
}

// MarshalJSON encodes the status as in the snapshot's proxies[].
func (p ProxyStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(proxyStatusWire{Name: p.Name, Up: p.Up, Reason: p.Reason, Version: p.Version, Upstream: p.Upstream,
		LastOK: jsonTime{p.LastOK}, Operations: p.Operations, Workspace: p.Workspace})
}

// UnmarshalJSON decodes one of the snapshot's proxies[] (cleaned by the
// snapshot's decoder).
func (p *ProxyStatus) UnmarshalJSON(b []byte) error {
	var w proxyStatusWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = ProxyStatus{Name: w.Name, Up: w.Up, Reason: w.Reason, Version: w.Version, Upstream: w.Upstream,
		LastOK: w.LastOK.Time, Operations: w.Operations, Workspace: w.Workspace}
	return nil
}

func cleanProxyStatuses(ps []ProxyStatus) []ProxyStatus {
	out := nilIfEmpty(ps)
	for i := range out {
		p := &out[i]
		p.Name, p.Reason, p.Version, p.Upstream = textfmt.Line(p.Name), textfmt.Line(p.Reason), textfmt.Line(p.Version), textfmt.Line(p.Upstream)
		p.Workspace = textfmt.Line(p.Workspace)
	}
	return out
}
