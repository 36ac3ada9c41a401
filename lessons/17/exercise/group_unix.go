//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// setGroup puts a server you start (redis-server) in a process group of its
// own, so that killGroup ends it and anything it started. Call it before
// cmd.Start.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the server's whole process group.
func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
