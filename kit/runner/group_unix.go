//go:build unix

package runner

import (
	"errors"
	"os/exec"
	"syscall"
)

// setGroup starts the child as the leader of a new process group, so that
// everything it starts can be killed with it.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the child's whole process group. It is safe to call
// after the child has exited: its grandchildren keep the group alive.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// groupAlive reports whether any process is left in process group pgid.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// exists reports whether a process pid exists (a zombie counts: it is not
// reaped yet). EPERM: it exists, another user's.
func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
