//go:build !unix

package provider_test

import "time"

// processCPU returns 0: the benchmarks report CPU time on Unix only.
func processCPU() time.Duration { return 0 }
