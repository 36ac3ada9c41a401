//go:build windows

package runner

import (
	"os/exec"
	"strconv"
	"syscall"
)

// setGroup starts the child in a new process group.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// killGroup kills the child and every process it started (taskkill /T).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	kill := exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(cmd.Process.Pid))
	_ = kill.Run()
}

// groupAlive cannot tell here; taskkill /T kills the child's tree anyway.
func groupAlive(int) bool { return false }
