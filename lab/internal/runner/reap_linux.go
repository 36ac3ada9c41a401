package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

var subreaper atomic.Bool

// BecomeSubreaper makes this process the child subreaper of everything it
// starts (Linux): a descendant whose parent exits — one that called setsid,
// started a group of its own, or daemonized — is re-parented to this
// process instead of to init, where Sweep finds and kills it. The lab
// command calls it once, before a check; library callers (tests) that do
// not call it get no sweeping. It reports whether it worked.
func BecomeSubreaper() bool {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); errno != 0 {
		return false
	}
	subreaper.Store(true)
	return true
}

// SweepSupported says whether Sweep can find what a run left behind.
const SweepSupported = true

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid, pgid int
	zombie          bool
}

// procs reads every process's parent, group and state.
func procs() map[int]proc {
	out := map[int]proc{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		out[pid] = proc{pid: pid, ppid: ppid, pgid: pgid, zombie: f[0] == "Z"}
	}
	return out
}

// runMarker returns the value of the run marker in pid's environment, or "".
func runMarker(pid int) string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return ""
	}
	for kv := range strings.SplitSeq(string(data), "\x00") {
		if v, ok := strings.CutPrefix(kv, markerEnv+"="); ok {
			return v
		}
	}
	return ""
}

// sweepBound caps one sweep: a fork-and-exit chain that outruns the kills
// for that long is counted as left (Result.Left), never waited for forever.
const sweepBound = 3 * time.Second

// sweep kills what runs left behind: every descendant of this process that
// is no longer below a child it started and waits for (an orphan the
// kernel re-parented here), with everything below it. An orphan is spared
// only while it carries the marker of a run still going (a daemon a running
// answer started on purpose); run's own (its marker, or its process group)
// and every unclaimed one go. Zombies among the orphans are reaped.
//
// It kills and reaps until two scans of /proc in a row find no orphan, not
// even a zombie: a chain whose every generation starts the next (in a new
// session) and exits at once is re-parented here one generation at a time,
// and a scan may see a generation only as the zombie it left, its child
// not yet listed (or not yet re-parented: see orphans). Stopping at the
// first scan with nothing alive let such a chain outlive the run in 2 of 5
// tests of six runs each. It returns how many processes it killed, and how many
// orphans still ran when sweepBound was up (0 unless a chain outran it).
func sweep(run *tracked) (killed, left int) {
	if !subreaper.Load() {
		return 0, 0
	}
	self := os.Getpid()
	dead := map[int]bool{}
	deadline := time.Now().Add(sweepBound)
	for quiet := 0; quiet < 2; {
		// Read /proc without the lock (it is slow on a loaded machine), then
		// decide under it: a child started meanwhile held the lock from
		// before its fork until it was registered, so it is known by now.
		all := procs()
		live.mu.Lock()
		doomed, settling := orphans(all, self, run)
		live.mu.Unlock()
		if len(doomed) == 0 && !settling {
			quiet++
			continue
		}
		quiet = 0
		if time.Now().After(deadline) {
			for _, pid := range doomed {
				if !all[pid].zombie {
					left++
				}
			}
			return len(dead), left
		}
		for _, pid := range doomed {
			if !all[pid].zombie && syscall.Kill(pid, syscall.SIGKILL) == nil {
				dead[pid] = true
			}
		}
		time.Sleep(time.Millisecond) // the kills land; the exits end; their children re-parent here
	}
	return len(dead), 0
}

// orphans returns the processes a sweep for run kills in the snapshot all
// (each orphan of self with everything below it), and reaps the orphans
// that are zombies, saying whether there were any; live.mu is held.
func orphans(all map[int]proc, self int, run *tracked) (doomed []int, settling bool) {
	children := map[int][]int{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	for _, pid := range children[self] {
		p := all[pid]
		if _, known := live.pids[pid]; known {
			continue
		}
		if p.zombie {
			// Reaped or not, a zombie means a scan is not quiet: a
			// multithreaded process's leader shows as a zombie (and cannot
			// be reaped) while its other threads still exit, and the child
			// one of them was forking is re-parented here only then.
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			settling = true
			continue
		}
		if run != nil && p.pgid != run.pgid {
			m := runMarker(pid)
			if _, running := live.markers[m]; running && m != "" && m != run.marker {
				continue // a daemon another run, still going, started on purpose
			}
		}
		doomed = append(doomed, subtree(children, pid)...)
	}
	return doomed, settling
}

// groupLeft counts the processes still running (zombies aside) in process
// group pgid.
func groupLeft(pgid int) int {
	n := 0
	for _, p := range procs() {
		if p.pgid == pgid && !p.zombie {
			n++
		}
	}
	return n
}

// subtree is pid and every process below it.
func subtree(children map[int][]int, pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
