package runner

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
)

// ChildrenEndWithLab says how a child ends when the lab ends without
// stopping it (kill -9, a crash): here, by its parent-death signal.
const ChildrenEndWithLab = "each child is started with a parent-death signal (SIGKILL): the kernel ends it when the lab ends, however the lab ends"

// forker runs functions on one goroutine locked to its OS thread for good.
// The kernel sends a child its parent-death signal when the *thread* that
// forked it exits, not the process, and the Go runtime ends a thread when
// a goroutine locked to it returns without unlocking; any thread may fork
// a child started from an ordinary goroutine. This goroutine never returns
// nor unlocks, so its thread lives exactly as long as the lab.
var forker = sync.OnceValue(func() chan<- func() {
	ch := make(chan func())
	go func() {
		runtime.LockOSThread() // never unlocked
		for f := range ch {
			f()
		}
	}()
	return ch
})

// onForkerThread runs f on the forker's thread and waits for it.
func onForkerThread(f func()) {
	done := make(chan struct{})
	forker() <- func() { defer close(done); f() }
	<-done
}

// start starts cmd from the forker's thread with SIGKILL as its
// parent-death signal. (os/exec checks, in the child, that the lab did not
// end between the fork and the prctl, and kills the child itself if so.)
func start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	var err error
	onForkerThread(func() { err = cmd.Start() })
	return err
}

// prSetPdeathsig is prctl's PR_SET_PDEATHSIG (linux/prctl.h).
const prSetPdeathsig = 1

// parentAtStart is the parent this program had when it started.
var parentAtStart = os.Getppid()

// endWithParent asks the kernel for SIGHUP when the parent ends, set on
// the forker's thread (the setting belongs to the thread that makes it,
// and is lost if that thread ends), then checks that the parent had not
// already ended: an orphan's parent is init or a subreaper.
func endWithParent() {
	if signal.Ignored(syscall.SIGHUP) {
		return // nohup: the user asked this process to outlive its terminal
	}
	var errno syscall.Errno
	onForkerThread(func() {
		_, _, errno = syscall.RawSyscall(syscall.SYS_PRCTL, prSetPdeathsig, uintptr(syscall.SIGHUP), 0)
	})
	if errno == 0 && os.Getppid() != parentAtStart {
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
	}
}

// parentGone is nil here: the parent's end arrives as SIGHUP.
func parentGone() <-chan struct{} { return nil }
