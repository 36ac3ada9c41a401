package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// tasks lists the thread IDs of pid (/proc/PID/task): one directory read.
// A glob of task/*/stat reads every thread's own directory too, which cost
// lab check a quarter of its CPU when it sampled every 10 ms.
func tasks(pid int) (dir string, tids []string, ok bool) {
	dir = filepath.Join("/proc", itoa(pid), "task")
	f, err := os.Open(dir)
	if err != nil {
		return dir, nil, false
	}
	defer f.Close()
	tids, err = f.Readdirnames(-1)
	return dir, tids, err == nil && len(tids) > 0
}

// busyThreads reports whether a thread of pid is running or ready to run
// (state R): the process is computing, not waiting. ok is false when it
// cannot be told.
func busyThreads(pid int) (busy, ok bool) {
	dir, tids, ok := tasks(pid)
	if !ok {
		return false, false
	}
	for _, tid := range tids {
		data, err := os.ReadFile(filepath.Join(dir, tid, "stat"))
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

// waitSampler reads, per thread of one process, the time it has spent ready
// to run but waiting for a CPU (the second field of
// /proc/PID/task/TID/schedstat). Each thread's file stays open between
// samples and is read again from its start: a sample costs one read per
// thread and one of the task directory.
type waitSampler struct {
	pid   int
	files map[string]*os.File
	buf   [256]byte
}

func newWaitSampler(pid int) *waitSampler {
	return &waitSampler{pid: pid, files: map[string]*os.File{}}
}

// sample raises last[tid] to each thread's current figure; it reports
// whether any thread could be read.
func (s *waitSampler) sample(last map[string]time.Duration) bool {
	dir, tids, ok := tasks(s.pid)
	if !ok {
		return false
	}
	got := false
	for _, tid := range tids {
		f := s.files[tid]
		if f == nil {
			var err error
			if f, err = os.Open(filepath.Join(dir, tid, "schedstat")); err != nil {
				continue
			}
			s.files[tid] = f
		}
		n, _ := f.ReadAt(s.buf[:], 0) // short: io.EOF with the whole file
		fields := strings.Fields(string(s.buf[:n]))
		if len(fields) < 2 {
			f.Close() // the thread has ended
			delete(s.files, tid)
			continue
		}
		ns, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		last[tid] = max(last[tid], time.Duration(ns))
		got = true
	}
	return got
}

// close closes the threads' files.
func (s *waitSampler) close() {
	for tid, f := range s.files {
		f.Close()
		delete(s.files, tid)
	}
}

// zombie reports whether pid has ended and waits to be reaped (state Z in
// /proc/PID/stat): the parent of an orphan may be slow to reap it.
func zombie(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	return i >= 0 && len(f) > 0 && f[0] == "Z"
}
