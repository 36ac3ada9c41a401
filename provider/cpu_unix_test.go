//go:build unix

package provider_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used,
// or 0 where it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
