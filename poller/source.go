package poller

import "github.com/dbxtop/dbxtop/sources"

// The engine's view of its sources; the interfaces live in sources so that
// sources/* need not import the poller.
type (
	Discoverer     = sources.Discoverer
	Discovered     = sources.Discovered
	StatusSource   = sources.StatusSource
	ActionSource   = sources.ActionSource
	CapacitySource = sources.CapacitySource
	IdleCloser     = sources.IdleCloser
)
