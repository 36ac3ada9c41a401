//go:build !linux

package quoteflow

import "testing"

// listenBlackhole skips: only Linux drops the SYN when the accept queue is full.
func listenBlackhole(t *testing.T) string {
	t.Skip("the blackhole listener works on Linux only (a full accept queue drops the SYN there)")
	return ""
}
