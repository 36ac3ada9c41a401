//go:build unix

package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTimeoutKillsTheWholeGroupInTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"the child hangs, its grandchild holds stdout", nil},
		{"the child exits, its grandchild holds stdout", []string{"RUNNER_EXIT=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := child("fork-and-hang", tc.env...)
			c.Timeout = time.Second
			start := time.Now()
			res := Run(context.Background(), c)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("Run took %v for a 1s bound: the kill did not reach the grandchild", took)
			}
			pid := grandchild(t, res.Output)
			if alive(pid) {
				t.Fatalf("grandchild %d still runs after Run returned (%+v)", pid, res)
			}
		})
	}
}

func grandchild(t *testing.T, out string) int {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "grandchild "); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(rest))
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("the child never said its grandchild's pid: %q", out)
	return 0
}

// alive reports whether pid still runs (a zombie counts as gone), waiting
// up to a second for the kill to land.
func alive(pid int) bool {
	deadline := time.Now().Add(time.Second)
	for {
		err := syscall.Kill(pid, 0)
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		zombie := strings.Contains(string(stat), ") Z ")
		if err != nil || zombie {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newSession() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
func newGroup() *syscall.SysProcAttr   { return &syscall.SysProcAttr{Setpgid: true} }

// unixChild runs the child programs that need process groups and
// sessions; it reports whether name was one.
func unixChild(name string) bool {
	switch name {
	case "chain":
		// A fork-and-exit chain: each generation starts the next in a
		// session of its own and exits at once, forever. The token in argv
		// lets the test find every generation in /proc.
		next := exec.Command(os.Args[0], os.Args[1:]...)
		next.SysProcAttr = newSession()
		if err := next.Start(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "leave":
		// Leaves 2 sleepers in its own group, 2 in sessions of their own and
		// 1 in a group of its own, then exits: 5 left.
		for _, attr := range []*syscall.SysProcAttr{nil, nil, newSession(), newSession(), newGroup()} {
			c := exec.Command(os.Args[0], os.Args[1:]...)
			c.Env = append(os.Environ(), "RUNNER_CHILD=hang")
			c.SysProcAttr = attr
			if err := c.Start(); err != nil {
				os.Exit(1)
			}
		}
	default:
		return false
	}
	return true
}
