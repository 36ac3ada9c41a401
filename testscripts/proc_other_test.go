//go:build !unix

package testscripts

import "os"

// processRuns reports whether pid runs (best effort outside Unix).
func processRuns(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(os.Signal(nil)) == nil
}
