//go:build !linux

package uitest_test

import "os/exec"

// ownGroup leaves the browser's process alone: chromedp kills it and its
// children when the test's context ends.
func ownGroup(cmd *exec.Cmd) {}

func killGroup(pid int) {}
