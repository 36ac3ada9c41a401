//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// setGroup puts redis-server in a process group of its own, so killGroup
// ends it and anything it started.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
