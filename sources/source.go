// Package sources holds what every source of operations and endpoints
// shares: references, status reports and the errors they return. The
// poller defines the interfaces; sources/thrift, sources/databricks and
// the simulator's clients implement them with these types.
package sources

import (
	"time"

	"github.com/dbxtop/dbxtop/model"
)

// Ref identifies an operation to a source.
type Ref struct {
	StatementID string // lower-case UUID
	WarehouseID string
	// Secret is the Thrift handle secret when known (only echoed back).
	Secret []byte
}

// Status is one successful status observation of an operation.
type Status struct {
	State       model.State
	StartedAt   time.Time
	CompletedAt time.Time
	// ErrorMessage is the server's error (or display) message.
	ErrorMessage string
	// ClientLastActivity is when the owning client last called the server;
	// nil when the source cannot tell.
	ClientLastActivity *time.Time
	// Open reports whether the server still holds the operation; nil when
	// unknown.
	Open *bool
	// Proxy is what `dbxtop proxy` saw of the operation; nil when no proxy
	// is configured or it did not see it.
	Proxy *model.ProxyAccount
}
