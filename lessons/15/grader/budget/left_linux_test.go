package budget

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"quoteflowlab.dev/kit/runner"
)

// What a tool leaves behind (a process in a session of its own) is counted
// truly, for lab check to fail it (Check): every call run of the reference,
// with a file added that starts a sleeper in a new session and writes its
// pid down, is counted once, and none of the sleepers is left running.
func TestAToolThatLeavesAProcessIsCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the call tool")
	}
	if !runner.BecomeSubreaper() {
		t.Skip("no child subreaper here")
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "left.pid")
	leave := filepath.Join(dir, "leave.go")
	src := fmt.Sprintf(`package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func init() {
	c := exec.Command("sleep", "60")
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if c.Start() != nil {
		return
	}
	if f, err := os.OpenFile(%q, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, c.Process.Pid)
		f.Close()
	}
}
`, pids)
	if err := os.WriteFile(leave, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	ref := filepath.Join(root, filepath.FromSlash(e15(t).Reference()))
	data, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(ref, "call", "leave.go"): leave}})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, data, 0o644); err != nil {
		t.Fatal(err)
	}
	bins := filepath.Join(dir, "bin")
	if err := copyDir(referenceBins(t), bins); err != nil {
		t.Fatal(err)
	}
	r := gradeAnswer(t, Options{Dir: e15(t).Reference(), Overlay: ov, BinDir: bins, Only: "call_model"})
	written, err := os.ReadFile(pids)
	if err != nil {
		t.Fatalf("no call run left a process: %v", err)
	}
	lines := strings.Fields(string(written))
	if r.Left == nil || r.Left.Processes != len(lines) || r.Left.Left != 0 {
		t.Fatalf("left %+v; want %d processes (one a call run), none still running", r.Left, len(lines))
	}
	for _, l := range lines {
		pid, _ := strconv.Atoi(l)
		if syscall.Kill(pid, 0) == nil {
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if !strings.Contains(string(stat), ") Z ") {
				t.Errorf("sleeper %d still runs", pid)
			}
		}
	}
}
