//go:build unix

package testscripts

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processRuns reports whether pid runs and is not a zombie.
func processRuns(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || !strings.Contains(string(stat), ") Z ")
}

// processesWith returns the pids of the processes (zombies aside) whose
// command line holds token, from /proc.
func processesWith(token string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), token) && processRuns(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
