package adminapi

import "time"

// PathLastCall is what a replica asks its peers (--peers) before it
// treats an operation as abandoned: GET /v1/operations/{id}/last-call
// (?session=SESSION_ID), behind the admin token. See docs/proxy.md
// "Replicas behind a load balancer".
const PathLastCall = PathOperations + "/{id}/last-call"

// LastCallPath is PathLastCall for one statement id.
func LastCallPath(statementID string) string {
	return PathOperations + "/" + statementID + "/last-call"
}

// LastCall is the JSON of GET /v1/operations/{id}/last-call: what this
// proxy saw of the operation and of its session. Times are zero when the
// proxy saw no such call.
type LastCall struct {
	// Instance is the answering proxy's instance id, random at each
	// start: a replica that finds its own id skips the answer (a DNS
	// name lists the asker too).
	Instance string `json:"instance"`
	// Known: the proxy holds the operation; Outcome is its close outcome
	// (sources.ProxyOpen, ProxyClosed, …), "" when not Known.
	Known   bool   `json:"known"`
	Outcome string `json:"outcome,omitempty"`
	// LastClientCallAt is the client's last successful call on the
	// operation, SessionLastClientCallAt on its session.
	LastClientCallAt        time.Time `json:"last_client_call_at"`
	SessionKnown            bool      `json:"session_known"`
	SessionLastClientCallAt time.Time `json:"session_last_client_call_at"`
	// InFlight: a client request on the operation or its session is being
	// served now. Pending: result pages were left to fetch or the last
	// answer did not reach the client whole (a slow reader).
	InFlight bool `json:"in_flight"`
	Pending  bool `json:"pending"`
}

// MaxLastCall bounds a LastCall answer read from a peer.
const MaxLastCall = 16 << 10
