//go:build !unix

package main

import "os/exec"

// setGroup does nothing where there are no process groups (Windows).
func setGroup(*exec.Cmd) {}

// killGroup kills the server; redis-server starts no children of its own.
func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }
