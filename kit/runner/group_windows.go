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

// stillActive is GetExitCodeProcess's code of a process still running.
const stillActive = 259

// exists reports whether process pid still runs.
func exists(pid int) bool {
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer syscall.CloseHandle(h)
	var code uint32
	return syscall.GetExitCodeProcess(h, &code) == nil && code == stillActive
}
