//go:build linux

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/kit/testenv"
)

// Everything lab demo starts ends when lab ends, however it ends: a
// hangup (a closed terminal), SIGTERM, a closed output (lab demo | head
// -1), or kill -9 (the children's parent-death signal; the scratch folder
// is then removed by the next run). lab runs as a process of its own (this
// test binary as lab) the test demo `lab demo 0 hold`: a redis-server and
// two QuoteFlow stand-ins, then a line every 20 ms until it is stopped.
func TestLabDemoLeavesNothingBehind(t *testing.T) {
	hupHeard(t)
	exe := labCommand(t)
	for _, tc := range []struct {
		name string
		end  func(lab *exec.Cmd, out *os.File)
	}{
		{"SIGHUP", func(lab *exec.Cmd, _ *os.File) { lab.Process.Signal(syscall.SIGHUP) }},
		{"SIGTERM", func(lab *exec.Cmd, _ *os.File) { lab.Process.Signal(syscall.SIGTERM) }},
		{"its output closed, as by head -1", func(_ *exec.Cmd, out *os.File) { out.Close() }},
		{"SIGKILL", func(lab *exec.Cmd, _ *os.File) { lab.Process.Kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			lab := exec.Command(exe, "demo", "0", "hold")
			lab.Env = append(os.Environ(), runAsLab+"=1", "TMPDIR="+tmp)
			lab.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			lab.Stdout, lab.Stderr = pw, &stderr
			if err := lab.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			exited := make(chan error, 1)
			go func() { exited <- lab.Wait() }()
			var kids []int
			t.Cleanup(func() { // what a failure left behind
				syscall.Kill(-lab.Process.Pid, syscall.SIGKILL)
				for _, pid := range kids {
					syscall.Kill(-pid, syscall.SIGKILL)
					syscall.Kill(pid, syscall.SIGKILL)
				}
				pr.Close()
			})

			first := make(chan string, 1)
			out := bufio.NewReader(pr)
			go func() { line, _ := out.ReadString('\n'); first <- line }()
			select {
			case line := <-first:
				if line != "ready\n" {
					t.Fatalf("lab demo 0 hold: first line %q, want ready; stderr:\n%s", line, stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("lab demo 0 hold not ready within 60 s; stderr:\n%s", stderr.String())
			}
			kids = children(lab.Process.Pid)
			ports := listening(kids)
			want := 2
			if _, err := exec.LookPath("redis-server"); err == nil {
				want = 3 // and redis-server
			}
			if len(kids) < want || len(ports) < want {
				t.Fatalf("lab runs %d processes listening on %v; want at least %d of each", len(kids), ports, want)
			}
			if tc.name != "its output closed, as by head -1" {
				go io.Copy(io.Discard, out) // a reader that stays
			}

			tc.end(lab, pr)
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				t.Fatalf("lab did not end within 20 s; stderr:\n%s", stderr.String())
			}
			assertGone(t, kids, ports)
			left, _ := filepath.Glob(filepath.Join(tmp, "lab-demo-*"))
			if tc.name == "SIGKILL" {
				// Killed outright, lab and its demo program (killed by
				// its parent-death signal) could not remove their
				// scratch folders: the next run does.
				if len(left) != 2 {
					t.Fatalf("scratch folders after kill -9: %v, want lab's and its demo program's", left)
				}
				if n := demo.RemoveLeftovers(tmp); n != 2 {
					t.Errorf("the next run removed %d leftover scratch folders, want 2", n)
				}
				left, _ = filepath.Glob(filepath.Join(tmp, "lab-demo-*"))
			}
			if len(left) > 0 {
				t.Errorf("scratch folder left behind: %v", left)
			}
		})
	}
}

// `go run ./lab provider`, then go run killed: the provider (go run's
// child, which go run passes no signal to) ends too and frees its ports.
// Once with go run itself, once with a stand-in for it that is killed
// outright; the provider listens on free ports.
func TestProviderEndsWithGoRun(t *testing.T) {
	hupHeard(t)
	exe := labCommand(t)
	root := testenv.Root(t)
	for _, tc := range []struct {
		name string
		cmd  func() *exec.Cmd
		sig  syscall.Signal
	}{
		{"go run, SIGTERM", func() *exec.Cmd {
			cmd := exec.Command("go", "run", "./lab", "provider", "--addr", "127.0.0.1:0", "--blackhole-addr", "127.0.0.1:0")
			cmd.Dir = root
			return cmd
		}, syscall.SIGTERM},
		{"go run's stand-in, SIGKILL", func() *exec.Cmd {
			cmd := exec.Command(exe, "provider", "--addr", "127.0.0.1:0", "--blackhole-addr", "127.0.0.1:0")
			cmd.Env = append(os.Environ(), runAsLab+"=1", goRunRole+"=1")
			return cmd
		}, syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gorun := tc.cmd()
			gorun.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			// A file, not a pipe: Wait must not wait for the provider to
			// close its copy.
			stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			gorun.Stdout, gorun.Stderr = pw, stderr
			if err := gorun.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			exited := make(chan error, 1)
			go func() { exited <- gorun.Wait() }()
			t.Cleanup(func() { syscall.Kill(-gorun.Process.Pid, syscall.SIGKILL); pr.Close() })

			addrs := make(chan []string, 1)
			go func() {
				var got []string
				sc := bufio.NewScanner(pr)
				for sc.Scan() {
					if rest, ok := strings.CutPrefix(sc.Text(), "provider lab serving on http://"); ok {
						got = append(got, strings.Fields(rest)[0])
					}
					if rest, ok := strings.CutPrefix(sc.Text(), "blackhole listening on "); ok {
						got = append(got, strings.Fields(rest)[0])
					}
					if len(got) == 2 {
						addrs <- got
						break
					}
				}
				io.Copy(io.Discard, pr)
			}()
			var ports []int
			select {
			case got := <-addrs:
				for _, a := range got {
					_, p, _ := net.SplitHostPort(a)
					n, _ := strconv.Atoi(p)
					ports = append(ports, n)
				}
			case <-time.After(3 * time.Minute): // go run may build lab first
				log, _ := os.ReadFile(stderr.Name())
				t.Fatalf("the provider did not say where it listens within 3 min; stderr:\n%s", log)
			}
			provider := children(gorun.Process.Pid)
			if len(provider) == 0 {
				t.Fatal("go run has no child")
			}
			t.Cleanup(func() {
				for _, pid := range provider {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})

			gorun.Process.Signal(tc.sig) // go run alone, as `kill <pid>` does
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				t.Fatal("go run did not end within 20 s")
			}
			assertGone(t, provider, ports)
		})
	}
}

// assertGone waits (10 s at most) until every process of pids has ended and
// nothing listens on ports any more.
func assertGone(t *testing.T, pids, ports []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !ended(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d (%s) still runs", pid, comm(pid))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, port := range ports {
		for {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err != nil {
				break
			}
			c.Close()
			if time.Now().After(deadline) {
				t.Fatalf("something still listens on port %d", port)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// children returns every process below pid (/proc).
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := stat(p); ok {
			parent[p] = ppid
		}
	}
	var out []int
	frontier := []int{pid}
	for len(frontier) > 0 {
		var next []int
		for p, pp := range parent {
			for _, f := range frontier {
				if pp == f {
					next = append(next, p)
				}
			}
		}
		out = append(out, next...)
		frontier = next
	}
	return out
}

// stat reads a process's state and parent from /proc/PID/stat.
func stat(pid int) (state string, ppid int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	if i < 0 || len(f) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}

// ended reports whether pid has exited (a zombie has: it only waits to be
// reaped by whoever adopted it).
func ended(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	state, _, ok := stat(pid)
	return !ok || state == "Z"
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "\x00", " ")
}

// listening returns the TCP ports the processes pids listen on: their
// sockets (/proc/PID/fd) that /proc/net/tcp lists in state LISTEN.
func listening(pids []int) []int {
	inodes := map[string]bool{}
	for _, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if rest, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
				inodes[strings.TrimSuffix(rest, "]")] = true
			}
		}
	}
	var ports []int
	data, _ := os.ReadFile("/proc/net/tcp")
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		_, hexPort, _ := strings.Cut(f[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
			ports = append(ports, int(p))
		}
	}
	return ports
}

// lab demo says so when the machine held it back: here the demo program
// is stopped (SIGSTOP) three times 100 ms during a 1.5 s demo, as a machine
// too busy to give it a CPU would, and its timer fires that late.
func TestLabDemoSaysWhenTheMachineHeldItBack(t *testing.T) {
	lab := exec.Command(labCommand(t), "demo", "0", "wait")
	lab.Env = append(os.Environ(), runAsLab+"=1", "TMPDIR="+t.TempDir())
	lab.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := lab.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	lab.Stderr = &stderr
	if err := lab.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-lab.Process.Pid, syscall.SIGKILL) })
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "started" {
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("lab demo 0 wait did not start within 30 s")
	}
	prog := children(lab.Process.Pid)
	if len(prog) != 1 {
		t.Fatalf("lab runs %d processes, want its demo program alone", len(prog))
	}
	for range 3 { // p99: more than one late sample in a hundred
		syscall.Kill(prog[0], syscall.SIGSTOP)
		time.Sleep(100 * time.Millisecond)
		syscall.Kill(prog[0], syscall.SIGCONT)
		time.Sleep(50 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- lab.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("lab demo 0 wait: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lab demo 0 wait did not end within 30 s")
	}
	if !strings.Contains(stderr.String(), "lab demo 0 wait: the machine was busy while it ran: a 10 ms timer fired up to") {
		t.Errorf("held back 3 × 100 ms, lab demo said nothing of it; stderr:\n%s", stderr.String())
	}
}

// hupHeard fails the test at once, with the reason, when this process
// ignores SIGHUP (go test started under nohup): every lab it starts inherits
// that and, by design, keeps ignoring it and outlives its parent, so the
// test would only time out with nothing to say why.
func hupHeard(t *testing.T) {
	t.Helper()
	if signal.Ignored(syscall.SIGHUP) {
		t.Fatal("SIGHUP is ignored in this test process (started under nohup?): a lab it starts keeps ignoring it, as nohup asks, and cannot end with its parent; run go test without nohup")
	}
}
