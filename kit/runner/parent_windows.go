//go:build windows

package runner

import (
	"os"
	"sync"
	"syscall"
)

var gone = sync.OnceValue(func() chan struct{} { return make(chan struct{}) })

// endWithParent closes parentGone's channel when the parent process ends:
// a handle opened on it at start is signalled when it exits (Windows has no
// hangup signal to send).
func endWithParent() {
	h, err := syscall.OpenProcess(syscall.SYNCHRONIZE, false, uint32(os.Getppid()))
	if err != nil {
		return // already gone, or not ours to watch: nothing to wait on
	}
	go func() {
		defer syscall.CloseHandle(h)
		if ev, err := syscall.WaitForSingleObject(h, syscall.INFINITE); err == nil && ev == syscall.WAIT_OBJECT_0 {
			close(gone())
		}
	}()
}

func parentGone() <-chan struct{} { return gone() }
