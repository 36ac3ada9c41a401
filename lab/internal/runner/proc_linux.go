package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// waited returns, per thread of pid, the time it has spent ready to run
// but waiting for a CPU (the second field of /proc/PID/task/TID/schedstat).
func waited(pid int) (map[string]time.Duration, bool) {
	files, err := filepath.Glob(filepath.Join("/proc", itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(files) == 0 {
		return nil, false
	}
	out := make(map[string]time.Duration, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data))
		if len(fields) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		out[filepath.Base(filepath.Dir(f))] = time.Duration(ns)
	}
	return out, len(out) > 0
}
