//go:build !unix

package proxy

import "time"

// cpuTime is unknown here: the CPU-cost check is skipped.
func cpuTime() (time.Duration, bool) { return 0, false }
