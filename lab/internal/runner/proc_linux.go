package runner

import (
	"os"
	"path/filepath"
	"strings"
)

// busyThreads reports whether a thread of pid is running or ready to run
// (state R): the process is computing, not waiting. ok is false when it
// cannot be told.
func busyThreads(pid int) (busy, ok bool) {
	stats, err := filepath.Glob(filepath.Join("/proc", itoa(pid), "task", "*", "stat"))
	if err != nil || len(stats) == 0 {
		return false, false
	}
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// The state follows the command name, which is in parentheses.
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 && strings.HasPrefix(string(data[i+1:]), " R") {
			return true, true
		}
	}
	return false, true
}
