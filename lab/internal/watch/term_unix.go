//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package watch

import (
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

func cbreak(fd int) (restore func(), ok bool) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, false
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO // ISIG stays: Ctrl-C is still SIGINT
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &t); err != nil {
		return nil, false
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, true
}
