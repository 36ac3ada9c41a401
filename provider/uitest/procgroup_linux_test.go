package uitest_test

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the browser in a process group of its own, killed with
// the test's thread if the test dies.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the browser's whole process group (renderers, GPU and
// network processes included).
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }
