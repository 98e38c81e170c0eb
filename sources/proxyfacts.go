package sources

import (
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// ProxyOperation is what `dbxtop proxy` saw of one Thrift operation that
// went through it: the JSON of its admin API (docs/proxy.md), read back by
// dbxtop's --proxy. Times are zero when unknown. It never carries a token,
// a secret or a request body.
type ProxyOperation struct {
	StatementID string `json:"statement_id"`
	SessionID   string `json:"session_id,omitempty"`
	// HTTPPath is the Thrift path the client used; WarehouseID is read
	// from it when it is /sql/1.0/warehouses/<id> ("" otherwise).
	HTTPPath          string `json:"http_path"`
	WarehouseID       string `json:"warehouse_id,omitempty"`
	ClientApplication string `json:"client_application"`
	UserAgent         string `json:"user_agent"`
	// State is the last state an answer through the proxy reported
	// (model.State text); UNKNOWN before any.
	State     model.State `json:"state"`
	StartedAt time.Time   `json:"started_at"`
	// LastClientRPCAt is the client's last call on the operation, and
	// SessionLastClientRPCAt its last call on the operation's session.
	LastClientRPCAt        time.Time    `json:"last_client_rpc_at"`
	SessionLastClientRPCAt time.Time    `json:"session_last_client_rpc_at"`
	Close                  ProxyClose   `json:"close"`
	Heals                  int          `json:"heals"`
	Actions                []ProxyEvent `json:"actions,omitempty"`
	// LearnedAfterStart: the proxy did not see the operation start (it
	// began before the proxy, or its start was not recorded); it learned
	// it from a successful call on it.
	LearnedAfterStart bool `json:"learned_after_start,omitempty"`
	// Unobserved says why the proxy could not read the answers about this
	// operation (an encoding it cannot decode): its state is unknown, and
	// it is forgotten like a finished one.
	Unobserved string `json:"unobserved,omitempty"`
}

// LastClientActivity is the later of the client's last call on the
// operation and on its session: what the server's inactivity reaper counts
// from.
func (p ProxyOperation) LastClientActivity() time.Time {
	if p.SessionLastClientRPCAt.After(p.LastClientRPCAt) {
		return p.SessionLastClientRPCAt
	}
	return p.LastClientRPCAt
}

// Close outcomes of a proxied operation.
const (
	ProxyOpen           = "open"             // nobody closed it yet
	ProxyClosed         = "closed"           // the client's close succeeded
	ProxyClosedByServer = "closed_by_server" // direct results or CloseSession closed it
	ProxyCloseFailed    = "close_failed"     // the client's close failed upstream; the proxy's queue retries it
	ProxyClosedByProxy  = "closed_by_proxy"  // the proxy's queue or abandonment closed it
	ProxyGone           = "gone"             // the server answered that the handle is gone
	ProxyUnobserved     = "unobserved"       // its answers could not be decoded: state unknown, not followed
)

// ProxyClose is the close account of a proxied operation.
type ProxyClose struct {
	Outcome string `json:"outcome"`
	// ClientAttempts counts the client's CloseOperation calls, and
	// ProxyAttempts the proxy's own (queue, abandonment, dbxtop's requests).
	ClientAttempts int              `json:"client_attempts"`
	ProxyAttempts  int              `json:"proxy_attempts"`
	ClientError    *model.ErrorInfo `json:"client_error,omitempty"`
	LastError      *model.ErrorInfo `json:"last_error,omitempty"`
	Queued         bool             `json:"queued"`
	NextTry        time.Time        `json:"next_try"`
}

// ProxyEvent is one thing the proxy did on its own for an operation (a
// heal, a queued close, an abandonment action), with its reason and whose
// credentials it used.
type ProxyEvent struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	// Credentials is "client" (the owning client's, held in memory while
	// its session lives) or "proxy" (the proxy's workspace credentials);
	// empty when no call was made.
	Credentials string `json:"credentials,omitempty"`
}
