// Package runner is the one way the lab runs child programs: go build, an
// answer, a tool, go test, and lab demo's servers. Every child ends when
// the lab ends, however it ends (Start), runs in a process group of its own,
// is killed with that whole group when its time is up (or when the caller
// gives up), has its output capped, and is waited for at most a short
// grace after the kill, so a grandchild that holds stdout open cannot
// stretch a run past its bound.
package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// MaxOutput bounds what is kept of one run's output; the start is kept,
// since that is where a program explains itself.
const MaxOutput = 64 << 10

// waitDelay is how long a killed child's pipes are waited for.
const waitDelay = 500 * time.Millisecond

// A Cmd is one child program to run.
type Cmd struct {
	Name    string        // program: a path, or a name looked up on PATH
	Args    []string      // arguments
	Dir     string        // working directory
	Env     []string      // extra KEY=VALUE settings over the lab's own environment
	Timeout time.Duration // kill after this long; 0: only when ctx is done
	// Stdout, when set, receives stdout separately (still capped); otherwise
	// stdout and stderr are combined in Result.Output.
	Stdout *Buffer
	// TempDir, when set, is the child's temporary folder (TMPDIR, and TMP
	// and TEMP for Windows): created for the run, and removed with
	// everything in it when the run ends, killed or not, once nothing the
	// child started is left running (Linux, as the child subreaper).
	TempDir string
	// Unmeasured: the child's threads are not sampled for Result.Starved
	// (-1) nor, when it is killed, for Result.Computing: for a server lab
	// keeps beside the runs it measures, sampled every 10 ms otherwise for
	// as long as it runs.
	Unmeasured bool
}

// Result is what one finished (or killed) child left behind.
type Result struct {
	ExitCode int    // -1 when it never ran or was killed
	Output   string // stdout and stderr combined (stderr only when Cmd.Stdout is set), capped
	TimedOut bool   // killed after Cmd.Timeout
	// HeldOpen: after the child exited or was killed, something it started
	// kept its output open; the group was killed and the pipes abandoned.
	HeldOpen bool
	Elapsed  time.Duration
	CPU      time.Duration // user + system time the child itself used
	// Computing: when it was killed, the child was running, not waiting
	// (Linux; elsewhere, it had used the CPU most of its time).
	Computing bool
	// Starved (Linux; -1 where it cannot be measured) is the time the
	// child's threads spent ready to run but waiting for a CPU, as a share
	// of its wall time: how much a busy machine held it back. A child that
	// mostly waits on timers and sockets is woken promptly even on a loaded
	// machine; one that needs the CPU gets only a share of it.
	Starved float64
	// StarvedPeak is Starved over the StarvedWindow (or the whole run, if
	// shorter) in which the threads waited most: a stall of a few hundred
	// milliseconds that a long run's share hides (-1 where not measured).
	StarvedPeak float64
	// Orphans is how many processes the child left running when it
	// exited, in any process group or session, all killed after it (Linux,
	// once BecomeSubreaper was called, counts every one: those still in its
	// group, those that called setsid, started a group of their own or
	// daemonized). A run killed at its time bound is killed with its group,
	// so then only those outside the group count. Without the subreaper only
	// the child's group is seen; outside Linux a group with anything left
	// in it counts as 1 (it cannot be counted there).
	Orphans int
	// Left is how many of them still ran when the sweep's bound (a few
	// seconds of killing) was up: a fork-and-exit chain that outran it.
	// They are killed again when the check ends (Sweep).
	Left int
	// OrphanNames are the command names of the orphans the sweep killed
	// (Linux, with the subreaper), for a report to say what was left.
	OrphanNames []string
	Err         error // could not start, or ctx was done first
}

// markerEnv names the variable that marks every process of one run (a
// random value per run, the same shape for every run), so that a sweep
// spares the daemons of a run still going.
const markerEnv = "LAB_RUN"

// tracked is one run, as a sweep sees it.
type tracked struct {
	marker string
	pgid   int
}

// live is what runs now: the children this process started and waits for,
// and the markers of their runs.
var live = struct {
	mu      sync.Mutex
	pids    map[int]struct{}
	markers map[string]struct{}
	// groups: the process groups of the runs still going, until each run's
	// own sweep is done. A process in one of them is that run's to count:
	// one its run killed with the group is still dying (its environment,
	// and so its marker, may be gone already) when another run's sweep
	// scans, and must not be counted there.
	groups map[int]struct{}
	// doomed: the orphans a sweep is killing, until it reaps them. Sweeps
	// of runs that end at once see the same orphans; each is counted by
	// the one sweep that claimed it, so counts add up to the true total.
	doomed map[int]struct{}
}{pids: map[int]struct{}{}, markers: map[string]struct{}{}, groups: map[int]struct{}{}, doomed: map[int]struct{}{}}

func newMarker() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Sweep kills every process a run left behind (Linux, once BecomeSubreaper
// was called; elsewhere it does nothing): the lab command calls it when a
// check ends, so that nothing an answer started outlives the check. It
// returns how many it killed, and how many still ran after its bound.
func Sweep() (killed, left int) {
	killed, left, _ = sweep(nil)
	return killed, left
}

// OK reports whether the child ran and exited 0.
func (r Result) OK() bool { return r.Err == nil && !r.TimedOut && r.ExitCode == 0 }

// Run runs c and waits for it, within c.Timeout and ctx.
func Run(ctx context.Context, c Cmd) (res Result) {
	tctx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		tctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	defer cancel()
	cmd := exec.Command(c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	var out Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	setGroup(cmd)
	cmd.WaitDelay = waitDelay
	run := &tracked{marker: newMarker()}
	cmd.Env = append(cmd.Env, markerEnv+"="+run.marker)
	if c.TempDir != "" {
		if err := os.MkdirAll(c.TempDir, 0o700); err != nil {
			return Result{ExitCode: -1, Err: err}
		}
		defer RemoveAll(c.TempDir)
		cmd.Env = append(cmd.Env, "TMPDIR="+c.TempDir, "TMP="+c.TempDir, "TEMP="+c.TempDir)
	}

	live.mu.Lock() // a sweep never sees this child before it is known
	began := time.Now()
	err := start(cmd)
	if err == nil {
		run.pgid = cmd.Process.Pid
		live.pids[cmd.Process.Pid] = struct{}{}
		live.markers[run.marker] = struct{}{}
		live.groups[run.pgid] = struct{}{}
	}
	live.mu.Unlock()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			err = fmt.Errorf("%s is not on your PATH: %w", c.Name, err)
		}
		return Result{ExitCode: -1, Err: err}
	}
	defer func() {
		live.mu.Lock()
		delete(live.pids, run.pgid)
		live.mu.Unlock()
		// What the child left running when it exited, in its group or in a
		// group or session of its own, goes too, counted (Linux, as the
		// child subreaper); then, everywhere, whatever is left in its group.
		res.Orphans, res.Left, res.OrphanNames = sweep(run)
		if n := groupLeft(run.pgid); n > 0 {
			res.Orphans += n
			killGroup(cmd)
		}
		live.mu.Lock()
		delete(live.markers, run.marker)
		delete(live.groups, run.pgid)
		live.mu.Unlock()
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	starve := func() (time.Duration, time.Duration, bool) { return 0, 0, false }
	if !c.Unmeasured {
		starve = watchStarvation(cmd.Process.Pid)
	}
	killed := false
	select {
	case err = <-done:
	case <-tctx.Done():
		killed = true
		computing, known := false, c.Unmeasured
		for range 5 * btoi(!c.Unmeasured) { // a spinning program is seen running in a few samples
			if computing, known = busyThreads(cmd.Process.Pid); computing || !known {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		killGroup(cmd)
		defer func() { res.Computing = computing || !known && res.CPU > res.Elapsed/2 }()
		err = <-done
	}
	res = Result{ExitCode: -1, Output: out.String(), Elapsed: time.Since(began), Starved: -1, StarvedPeak: -1}
	if w, peak, ok := starve(); ok && res.Elapsed > 0 {
		res.Starved = float64(w) / float64(res.Elapsed)
		res.StarvedPeak = float64(peak) / float64(min(res.Elapsed, StarvedWindow))
	}
	res.HeldOpen = errors.Is(err, exec.ErrWaitDelay)
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
	}
	switch {
	case killed && ctx.Err() != nil:
		res.Err = ctx.Err()
	case killed:
		res.TimedOut = true
	case err == nil || errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success():
		res.ExitCode = 0
	default:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			res.ExitCode = exit.ExitCode()
		} else if cmd.ProcessState != nil {
			res.ExitCode = cmd.ProcessState.ExitCode()
		} else {
			res.Err = err
		}
	}
	return res
}

// GoCommand finds the go command: on PATH, else in this program's GOROOT.
func GoCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// BuildTimeout bounds one `go build`: a cold cache on a slow laptop
// compiles net/http first.
const BuildTimeout = 10 * time.Minute

// buildFlags are every build's flags (see Build).
var buildFlags = func() []string {
	flags := []string{"-gcflags=-l", "-ldflags=-s -w"}
	if Trimpath() {
		flags = append([]string{"-trimpath"}, flags...)
	}
	return flags
}()

// Trimpath reports whether this program was built with -trimpath; every
// build it starts is built the same way. -trimpath is part of each
// package's key in the Go build cache, the standard library's included: a
// build with it and one without compile everything twice. A lab built by
// `go run ./lab` (or a test binary of plain `go test ./...`) therefore
// builds without it, and shares every package its own build compiled; built
// with GOFLAGS=-trimpath (as CI builds), it builds with it.
func Trimpath() bool {
	trimpathOnce.Do(func() {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "-trimpath" {
					trimpath = s.Value == "true"
				}
			}
		}
	})
	return trimpath
}

var (
	trimpathOnce sync.Once
	trimpath     bool
)

// buildEnv is what every build adds to the lab's environment.
var buildEnv = []string{"GOWORK=off"}

// Build runs `go build` of pkg into bin in dir, with an optional overlay.
// GOWORK=off: a go.work a student keeps above the clone must not change
// what is built.
func Build(ctx context.Context, dir, overlay, bin, pkg string) Result {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return Result{ExitCode: -1, Err: err}
	}
	// -gcflags=-l applies to pkg alone (the answer, or a tool): a re-check
	// after an edit compiles only that package, and for an answer that
	// imports go-redis and miniredis inlining is most of that compile (E17:
	// 3.4 s of CPU with it, 2.0 s without); the answer's runs wait on
	// sockets and timers, not on calls inlining would save.
	//
	// -trimpath when this program was built with it (Trimpath): then
	// nothing built depends on where the course is, and the Go build cache
	// serves a clone at another path (or a second clone) with what the
	// first compiled: the checkpoints, the mutant schemata, the tools.
	// Without it each package's directory is part of its cache key, and the
	// standard library and the modules are the ones `go run ./lab` (or `go
	// test ./...`) compiled, not a second copy of each.
	args := append([]string{"build"}, buildFlags...)
	args = append(args, "-o", bin)
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, pkg)
	return Run(ctx, Cmd{Name: GoCommand(), Args: args, Dir: dir, Env: buildEnv, Timeout: BuildTimeout})
}

// BuildInto runs one `go build` of every package in pkgs (main packages)
// into the directory out, each binary named after its package's folder:
// one go command loading the module once, where a build per package would
// load it once each. Flags as Build.
func BuildInto(ctx context.Context, dir, overlay, out string, pkgs ...string) Result {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Result{ExitCode: -1, Err: err}
	}
	args := append([]string{"build"}, buildFlags...)
	args = append(args, "-o", out+string(filepath.Separator))
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, pkgs...)
	return Run(ctx, Cmd{Name: GoCommand(), Args: args, Dir: dir, Env: buildEnv, Timeout: BuildTimeout})
}

// Exe adds the platform's executable suffix.
func Exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// Buffer keeps the first Limit bytes written to it (MaxOutput when Limit
// is 0); it is safe for the two writers (stdout, stderr) exec uses.
type Buffer struct {
	Limit     int
	mu        sync.Mutex
	buf       bytes.Buffer
	truncated bool
}

// Write keeps what fits and never fails, so a chatty child is not killed
// by a full pipe.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.Limit
	if limit <= 0 {
		limit = MaxOutput
	}
	if room := limit - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		b.truncated = true
	} else {
		b.buf.Write(p)
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String returns what was kept, saying so when output was cut.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated {
		return b.buf.String() + "\n... (output truncated)\n"
	}
	return b.buf.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RemoveAll removes path with everything in it, as os.RemoveAll, and also
// what a child made hard to remove: folders it left without write or
// search permission are opened up first.
func RemoveAll(path string) error {
	if err := os.RemoveAll(path); err == nil {
		return nil
	}
	_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(path)
}

// sampleEvery is how often a running child's threads are sampled.
const sampleEvery = 10 * time.Millisecond

// StarvedWindow is the span over which Result.StarvedPeak is measured: a
// stall this long is enough to make a check timed in hundreds of
// milliseconds miss its bound, and a whole run's share can hide it.
const StarvedWindow = 250 * time.Millisecond

// watchStarvation samples pid's threads until the returned function is
// called, which gives the total time they waited for a CPU, and the most
// they waited within any StarvedWindow. A thread's count only grows, so the
// last sample of each is kept; a thread that ended between samples loses at
// most 10 ms.
func watchStarvation(pid int) func() (total, peak time.Duration, ok bool) {
	type point struct {
		at    time.Time
		total time.Duration
	}
	var (
		last    = map[string]time.Duration{} // the sampler's own until stopped
		ok      bool
		peak    time.Duration
		quit    = make(chan struct{})
		stopped = make(chan struct{})
	)
	sum := func() (total time.Duration) {
		for _, d := range last {
			total += d
		}
		return total
	}
	go func() {
		defer close(stopped)
		s := newWaitSampler(pid)
		defer s.close()
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		var window []point // the samples of the last StarvedWindow
		for {
			ok = s.sample(last) || ok
			now := point{time.Now(), sum()}
			for len(window) > 1 && now.at.Sub(window[1].at) >= StarvedWindow {
				window = window[1:]
			}
			if len(window) > 0 {
				peak = max(peak, now.total-window[0].total)
			}
			window = append(window, now)
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() (time.Duration, time.Duration, bool) {
		close(quit)
		<-stopped
		return sum(), peak, ok
	}
}

// SetGroup makes cmd, when started, the leader of a process group of its
// own, so KillGroup kills it with everything it started: for long-running
// children the caller starts itself (lab demo's servers).
func SetGroup(cmd *exec.Cmd) { setGroup(cmd) }

// KillGroup kills cmd's whole process group (taskkill /T on Windows).
func KillGroup(cmd *exec.Cmd) { killGroup(cmd) }

// SweepBound caps how long one sweep kills what a run left (Linux): a
// fork-and-exit chain still starting processes after that is counted as
// left (Result.Left), never waited for forever.
const SweepBound = 3 * time.Second

// Start starts cmd so that it ends when the lab ends, however the lab ends
// (see ChildrenEndWithLab): every child the lab starts goes through it.
func Start(cmd *exec.Cmd) error { return start(cmd) }

// EndWithParent makes this process end with the one that started it, as
// it ends when its terminal closes: once the parent has ended, it receives
// SIGHUP (Linux: the kernel's parent-death signal; elsewhere on unix, a
// look at the parent pid every 250 ms), or, on Windows, ParentGone's
// channel closes. `go run ./lab provider` is the case in point: go run
// does not pass a signal on to the program it runs, so killing go run
// would leave the provider holding its ports. Started with SIGHUP ignored
// (nohup), the process is left to outlive its parent, as asked. The lab
// command calls it first thing; calls after the first do nothing.
func EndWithParent() { endOnce() }

var endOnce = sync.OnceFunc(endWithParent)

// ParentGone returns a channel closed when the parent ended, where that
// end cannot arrive as SIGHUP (Windows); elsewhere nil.
func ParentGone() <-chan struct{} { return parentGone() }

// Alive reports whether process pid runs (a zombie, ended and not yet
// reaped, does not: Linux).
func Alive(pid int) bool { return exists(pid) && !zombie(pid) }

// WatchStarvation samples pid's threads (this process's own too) until the
// returned function is called, which gives the share of the wall time since
// this call that they waited for a CPU, summed over threads (as
// Result.Starved; -1 where it cannot be measured), and that wall time.
func WatchStarvation(pid int) func() (starved float64, elapsed time.Duration) {
	began := time.Now()
	stop := watchStarvation(pid)
	return func() (float64, time.Duration) {
		w, _, ok := stop()
		elapsed := time.Since(began)
		if !ok || elapsed <= 0 {
			return -1, elapsed
		}
		return float64(w) / float64(elapsed), elapsed
	}
}
