//go:build unix

package testscripts

import (
	"fmt"
	"os"
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
