//go:build !linux

package runner

import "time"

func busyThreads(int) (busy, ok bool) { return false, false }

func waited(int) (map[string]time.Duration, bool) { return nil, false }
