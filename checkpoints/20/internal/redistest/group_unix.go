//go:build unix

package redistest

import (
	"os/exec"
	"syscall"
)

// setGroup puts the server in a process group of its own, so killGroup ends
// it and anything it started.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
