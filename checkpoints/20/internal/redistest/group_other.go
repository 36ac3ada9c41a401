//go:build !unix

package redistest

import "os/exec"

func setGroup(*exec.Cmd) {}

// killGroup kills the server; redis-server starts no children of its own.
func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }
