package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

var (
	subreaper atomic.Bool
	sweeping  sync.Mutex
)

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
	comm            string // its command name, as the kernel keeps it (15 bytes at most)
}

// procs reads every process's parent, group and state: one read of
// /proc/PID/stat each, straight into one buffer (1.2 ms for 110 processes
// here, 2.2 ms through os.ReadFile). A sweep reads only this process's
// descendants (below), and all of /proc where the kernel cannot list them.
func procs() map[int]proc {
	out := map[int]proc{}
	d, err := os.Open("/proc")
	if err != nil {
		return out
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var buf [512]byte
	path := make([]byte, 0, 32)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid, &buf, &path); ok {
			out[pid] = p
		}
	}
	return out
}

// readStat reads one process's /proc/PID/stat into a proc, with buf and
// path as scratch space.
func readStat(pid int, buf *[512]byte, path *[]byte) (proc, bool) {
	*path = strconv.AppendInt(append((*path)[:0], "/proc/"...), int64(pid), 10)
	*path = append(*path, "/stat"...)
	fd, err := syscall.Open(string(*path), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return proc{}, false
	}
	n, err := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return proc{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	data := buf[:n]
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return proc{}, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 3 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	pgid, _ := strconv.Atoi(string(f[2]))
	var comm string
	if j := bytes.IndexByte(data, '('); j >= 0 && j < i {
		comm = string(data[j+1 : i])
	}
	return proc{pid: pid, ppid: ppid, pgid: pgid, zombie: len(f[0]) == 1 && f[0][0] == 'Z', comm: comm}, true
}

// below returns self's descendants, as procs does for every process, read
// from the kernel's list of each thread's children
// (/proc/PID/task/TID/children), level by level: a few files where procs
// reads one per process on the machine (0.06 ms against 7-11 ms for 340
// processes, 30 ms or more for the 900 of a CI run), so a sweep chasing a
// chain of processes that fork and exit scans many times faster than the
// chain grows. ok is false where the kernel keeps no such list (built
// without CONFIG_PROC_CHILDREN): then only procs can tell.
func below(self int) (out map[int]proc, ok bool) {
	out = map[int]proc{}
	var buf [512]byte
	path := make([]byte, 0, 32)
	level := []int{self}
	for len(level) > 0 {
		var next []int
		for _, pid := range level {
			tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
			if err != nil {
				if pid == self {
					return nil, false
				}
				continue // gone
			}
			for _, t := range tasks {
				data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
				if err != nil {
					if pid == self && os.IsNotExist(err) {
						return nil, false
					}
					continue
				}
				for _, f := range bytes.Fields(data) {
					child, err := strconv.Atoi(string(f))
					if err != nil {
						continue
					}
					if _, seen := out[child]; seen {
						continue
					}
					if p, ok := readStat(child, &buf, &path); ok {
						out[child] = p
						next = append(next, child)
					}
				}
			}
		}
		level = next
	}
	return out, true
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

// sweep kills what runs left behind: every descendant of this process that
// is no longer below a child it started and waits for (an orphan the
// kernel re-parented here), with everything below it. An orphan is spared
// only while it is in the process group of another run still going (that
// run counts it: it may be dying already, killed with its group, and its
// marker gone with its memory) or carries the marker of one (a daemon a
// running answer started on purpose); run's own (its marker, or its
// process group) and every unclaimed one go. Zombies among the orphans are reaped.
//
// It kills and reaps until two scans of /proc in a row find no orphan, not
// even a zombie: a chain whose every generation starts the next (in a new
// session) and exits at once is re-parented here one generation at a time,
// and a scan may see a generation only as the zombie it left, its child
// not yet listed (or not yet re-parented: see orphans). Stopping at the
// first scan with nothing alive let such a chain outlive the run in 2 of 5
// tests of six runs each. It returns how many processes it killed, and how many
// orphans still ran when SweepBound was up (0 unless a chain outran it),
// and the command name of each it killed.
func sweep(run *tracked) (killed, left int, names []string) {
	if !subreaper.Load() {
		return 0, 0, nil
	}
	// One sweep at a time: runs end ten at a time, and ten sweeps scanning
	// /proc at once each see the others' orphans; one sweep kills them all
	// (what the others then find is gone) with a tenth of the scans, and
	// scans faster than ten.
	sweeping.Lock()
	defer sweeping.Unlock()
	self := os.Getpid()
	dead := map[int]bool{}
	deadline := time.Now().Add(SweepBound)
	// One quiet scan ends a sweep that has seen nothing: everything the run
	// started was re-parented here before its child was reaped, so it would
	// show. Once something showed, two in a row.
	for quiet, need := 0, 1; quiet < need; {
		// Read /proc without the lock (it is slow on a loaded machine), then
		// decide under it: a child started meanwhile held the lock from
		// before its fork until it was registered, so it is known by now.
		all, ok := below(self)
		if !ok {
			all = procs()
		}
		live.mu.Lock()
		doomed, settling := orphans(all, self, run)
		live.mu.Unlock()
		if len(doomed) == 0 && !settling {
			quiet++
			if quiet < need {
				// A scan takes a tenth of a millisecond: the two quiet
				// ones are a millisecond apart, time for an exit under
				// way to re-parent its children here.
				time.Sleep(time.Millisecond)
			}
			continue
		}
		quiet, need = 0, 2
		late := time.Now().After(deadline)
		for _, pid := range doomed {
			if all[pid].zombie {
				continue
			}
			if all[pid].pgid == pid {
				// A group leader's whole group goes at once: the child it is
				// starting is in it until that child calls setsid, so a
				// chain whose every link starts the next in a new session
				// loses the link on its way. (Only the group of an orphan
				// being killed: never lab's group, nor one a run leads.)
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
			if syscall.Kill(pid, syscall.SIGKILL) != nil {
				continue
			}
			if !dead[pid] {
				names = append(names, all[pid].comm)
			}
			if late {
				left++ // killed too, but the chain may have gone on
			} else {
				dead[pid] = true
			}
		}
		if late {
			return len(dead), left, names
		}
		time.Sleep(time.Millisecond) // the kills land; the exits end; their children re-parent here
	}
	return len(dead), 0, names
}

// orphans returns the processes a sweep for run kills in the snapshot all
// (each orphan of self with everything below it, but those another sweep
// claimed), claims them, and reaps the orphans that are zombies; settling
// says whether there were any zombies or claimed ones, which another scan
// must see gone. live.mu is held.
func orphans(all map[int]proc, self int, run *tracked) (doomed []int, settling bool) {
	children := map[int][]int{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	for pid := range live.doomed {
		if _, ok := all[pid]; !ok {
			delete(live.doomed, pid) // gone (reaped by its parent): the pid may be used again
		}
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
			if got, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid {
				delete(live.doomed, pid) // gone: the pid may be used again
			}
			settling = true
			continue
		}
		if run != nil && p.pgid != run.pgid {
			if _, going := live.groups[p.pgid]; going {
				continue // in the group of another run still going: that run's sweep counts it
			}
			m := runMarker(pid)
			if _, running := live.markers[m]; running && m != "" && m != run.marker {
				continue // a daemon another run, still going, started on purpose
			}
		}
		for _, d := range subtree(children, pid) {
			if _, claimed := live.doomed[d]; claimed {
				settling = true // another sweep kills it: wait until it is gone
				continue
			}
			live.doomed[d] = struct{}{}
			doomed = append(doomed, d)
		}
	}
	return doomed, settling
}

// groupLeft counts the processes still running (zombies aside) in process
// group pgid.
func groupLeft(pgid int) int {
	if syscall.Kill(-pgid, 0) != nil {
		return 0 // the group is empty: no need to read /proc
	}
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
