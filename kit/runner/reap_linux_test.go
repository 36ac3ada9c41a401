package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// countWith says how many processes, zombies aside, carry token in their
// command line.
func countWith(token string) int {
	n := 0
	for pid, p := range procs() {
		if p.zombie {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if strings.Contains(string(cmdline), token) {
			n++
		}
	}
	return n
}

func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	return "token-" + hex.EncodeToString(b)
}

// A fork-and-exit chain in new sessions (each generation starts the next
// and exits at once) does not outlive Run, six runs in a row: /proc holds
// none of it when Run returns, and the run says it left processes behind.
func TestNoForkAndExitChainOutlivesTheRun(t *testing.T) {
	if !BecomeSubreaper() {
		t.Skip("no child subreaper here")
	}
	for i := range 6 {
		tok := token(t)
		c := child("chain")
		c.Args = []string{tok}
		c.Timeout = 10 * time.Second
		res := Run(context.Background(), c)
		if n := countWith(tok); n != 0 {
			t.Fatalf("run %d: %d processes of the chain still run after Run returned (%+v)", i+1, n, res)
		}
		if res.Orphans < 1 || res.Left != 0 {
			t.Fatalf("run %d: Orphans %d, Left %d: want at least 1 killed and none left", i+1, res.Orphans, res.Left)
		}
	}
}

// Every process a child leaves when it exits is counted, whatever group or
// session it is in: 2 in the child's own group, 2 in sessions of their
// own, 1 in a group of its own.
func TestEveryProcessLeftIsCounted(t *testing.T) {
	if !BecomeSubreaper() {
		t.Skip("no child subreaper here")
	}
	tok := token(t)
	c := child("leave")
	c.Args = []string{tok}
	res := Run(context.Background(), c)
	if !res.OK() || res.Orphans != 5 || res.Left != 0 {
		t.Fatalf("got exit %d, Orphans %d, Left %d; want 0, 5, 0 (%s)", res.ExitCode, res.Orphans, res.Left, res.Output)
	}
	if n := countWith(tok); n != 0 {
		t.Fatalf("%d of them still run after Run returned", n)
	}
	// Each is named, as the kernel names it (this test binary, cut to 15 bytes).
	exe := filepath.Base(os.Args[0])
	if len(res.OrphanNames) != 5 || res.OrphanNames[0] != exe[:min(15, len(exe))] {
		t.Fatalf("OrphanNames %q; want 5 of %q", res.OrphanNames, exe)
	}
}

// A child's temporary folder is its own and goes when the run ends, with a
// folder the child locked and what it made in the system temp folder.
func TestTempDirIsRemoved(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "run", "tmp")
	c := child("mktemp")
	c.TempDir = tmp
	res := Run(context.Background(), c)
	made := strings.TrimSpace(res.Output)
	if !res.OK() || !strings.HasPrefix(made, tmp+string(filepath.Separator)) {
		t.Fatalf("the child made %q (exit %d), want a folder inside %s", made, res.ExitCode, tmp)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the temporary folder is still there after the run: %v", err)
	}
}

// A run stopped early (its caller gave up: lab check's Ctrl-C) removes its
// temporary folder all the same.
func TestTempDirIsRemovedWhenTheRunIsStopped(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "run", "tmp")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	c := child("mktemp", "RUNNER_HANG=1")
	c.TempDir = tmp
	res := Run(ctx, c)
	if res.Err == nil || !strings.HasPrefix(strings.TrimSpace(res.Output), tmp) {
		t.Fatalf("got %+v; want a run stopped by its caller after making a folder in %s", res, tmp)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the temporary folder is still there after the run was stopped: %v", err)
	}
}

// An orphan in the process group of another run still going is that run's
// to count, marker or not (one its run killed with the group may be dying,
// its environment gone, when this sweep scans: a CI run charged E15's
// caps_flat with 16 processes while hangs_with_child's killed tool runs,
// a shell and a sleep each, were dying beside it);
// an orphan in no run's group, with no marker, is this run's.
func TestAnOrphanInAnotherRunsGroupIsThatRunsToCount(t *testing.T) {
	// Pids above any pid_max (2^22): /proc has none of them, so neither
	// has a marker.
	const self, other, mine, stray = 1 << 23, 1<<23 + 1, 1<<23 + 2, 1<<23 + 3
	all := map[int]proc{
		self:  {pid: self, ppid: 1, pgid: self},
		other: {pid: other, ppid: self, pgid: 1<<23 + 100}, // in a group of a run still going
		mine:  {pid: mine, ppid: self, pgid: 1<<23 + 200},  // in this run's group
		stray: {pid: stray, ppid: self, pgid: stray},       // a session of its own, no marker
	}
	live.mu.Lock()
	live.groups[1<<23+100] = struct{}{}
	run := &tracked{marker: "m", pgid: 1<<23 + 200}
	doomed, _ := orphans(all, self, run)
	delete(live.groups, 1<<23+100)
	for _, pid := range doomed {
		delete(live.doomed, pid)
	}
	live.mu.Unlock()
	slices.Sort(doomed)
	if want := []int{mine, stray}; !slices.Equal(doomed, want) {
		t.Fatalf("doomed %v, want %v (not the other run's %d)", doomed, want, other)
	}
}

// below, the sweep's scan, finds what procs (every process of the machine)
// finds below this process, field for field.
func TestBelowFindsWhatAFullScanFinds(t *testing.T) {
	c := exec.Command("sh", "-c", "sleep 30 & sleep 30; wait")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	self := os.Getpid()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, ok := below(self)
		if !ok {
			t.Skip("this kernel lists no children (/proc/PID/task/TID/children): the sweep scans all of /proc")
		}
		all := procs()
		want := map[int]proc{}
		for _, pid := range subtreeOf(all, self) {
			want[pid] = all[pid]
		}
		if len(got) == 3 && maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("below: %v; a full scan: %v (want the shell and its two sleeps)", got, want)
		}
		time.Sleep(10 * time.Millisecond) // the shell is starting its sleeps
	}
}

// subtreeOf is every process below pid in all, pid aside.
func subtreeOf(all map[int]proc, pid int) []int {
	children := map[int][]int{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	return subtree(children, pid)[1:]
}
