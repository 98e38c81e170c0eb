//go:build unix

package proxy

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used so far (user + system,
// every thread): what a load costs, whatever else shares the machine.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
