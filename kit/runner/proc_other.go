//go:build !linux

package runner

import "time"

func busyThreads(int) (busy, ok bool) { return false, false }

// waitSampler measures nothing where /proc/PID/task is missing.
type waitSampler struct{}

func newWaitSampler(int) *waitSampler { return &waitSampler{} }

func (*waitSampler) sample(map[string]time.Duration) bool { return false }

func (*waitSampler) close() {}

func zombie(int) bool { return false }
