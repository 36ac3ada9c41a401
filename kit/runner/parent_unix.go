//go:build unix && !linux

package runner

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// parentAtStart is the parent this program had when it started.
var parentAtStart = os.Getppid()

// parentPoll is how often the parent is looked for where the kernel has no
// parent-death signal.
const parentPoll = 250 * time.Millisecond

// endWithParent sends this process SIGHUP once its parent has ended: an
// orphan is re-parented (to launchd, init or a subreaper), so its parent
// pid changes.
func endWithParent() {
	if signal.Ignored(syscall.SIGHUP) {
		return // nohup: the user asked this process to outlive its terminal
	}
	go func() {
		for os.Getppid() == parentAtStart {
			time.Sleep(parentPoll)
		}
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
	}()
}

// parentGone is nil here: the parent's end arrives as SIGHUP.
func parentGone() <-chan struct{} { return nil }
