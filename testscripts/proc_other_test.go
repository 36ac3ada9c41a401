//go:build !unix

package testscripts

import (
	"errors"
	"os"
)

// processRuns reports whether pid runs (best effort outside Unix).
func processRuns(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(os.Signal(nil)) == nil
}

// processesWith needs /proc.
func processesWith(string) ([]int, error) {
	return nil, errors.New("running: no /proc here (guard the script with [linux])")
}
