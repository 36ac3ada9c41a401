package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test binary doubles as the child programs: RUNNER_CHILD picks one.
func TestMain(m *testing.M) {
	if unixChild(os.Getenv("RUNNER_CHILD")) {
		os.Exit(0)
	}
	switch os.Getenv("RUNNER_CHILD") {
	case "":
		os.Exit(m.Run())
	case "echo":
		fmt.Println("hello from the child")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	case "fork-and-hang":
		// Start a grandchild that holds our stdout open, tell the test its
		// pid, then hang ourselves: the kill must reach both.
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), "RUNNER_CHILD=hang")
		gc.Stdout, gc.Stderr = os.Stdout, os.Stderr
		if err := gc.Start(); err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		fmt.Printf("grandchild %d\n", gc.Process.Pid)
		if os.Getenv("RUNNER_EXIT") != "" {
			os.Exit(0) // leave the grandchild holding stdout
		}
		time.Sleep(time.Hour)
	case "crowd":
		// More spinning threads than CPUs, for half a second: most of the
		// time most of them wait for a CPU.
		runtime.GOMAXPROCS(4 * runtime.NumCPU())
		stop := time.Now().Add(500 * time.Millisecond)
		var wg sync.WaitGroup
		for range 4 * runtime.NumCPU() {
			wg.Go(func() {
				for time.Now().Before(stop) {
				}
			})
		}
		wg.Wait()
	case "nap":
		time.Sleep(300 * time.Millisecond)
	case "stall-then-nap":
		// Twice as many spinning threads as CPUs for 150 ms, then a nap
		// of 2 s: held back for a moment, quiet on the whole.
		runtime.GOMAXPROCS(2 * runtime.NumCPU())
		stop := time.Now().Add(150 * time.Millisecond)
		var wg sync.WaitGroup
		for range 2 * runtime.NumCPU() {
			wg.Go(func() {
				for time.Now().Before(stop) {
				}
			})
		}
		wg.Wait()
		time.Sleep(2 * time.Second)
	case "mktemp":
		// A folder in the system temp folder, written to, never removed.
		dir, err := os.MkdirTemp("", "answer-")
		if err != nil {
			os.Exit(1)
		}
		os.WriteFile(filepath.Join(dir, "left"), []byte("x"), 0o644)
		os.Mkdir(filepath.Join(dir, "locked"), 0o700)
		os.WriteFile(filepath.Join(dir, "locked", "in"), []byte("x"), 0o644)
		os.Chmod(filepath.Join(dir, "locked"), 0o500)
		fmt.Println(dir)
		if os.Getenv("RUNNER_HANG") != "" {
			time.Sleep(time.Hour)
		}
	case "chatty":
		line := strings.Repeat("x", 1023) + "\n"
		for range 200 {
			os.Stdout.WriteString(line)
		}
	}
	os.Exit(0)
}

func child(name string, env ...string) Cmd {
	return Cmd{Name: os.Args[0], Env: append([]string{"RUNNER_CHILD=" + name}, env...)}
}

func TestRunReportsExitCodeAndOutput(t *testing.T) {
	res := Run(context.Background(), child("echo"))
	if res.ExitCode != 3 || res.Err != nil || res.TimedOut || !strings.Contains(res.Output, "hello from the child") {
		t.Fatalf("got %+v", res)
	}
}

func TestContextCancelIsNotATimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	c := child("hang")
	c.Timeout = time.Minute
	res := Run(ctx, c)
	if res.TimedOut || res.Err == nil || res.Elapsed > 5*time.Second {
		t.Fatalf("got %+v, want Err set (the caller gave up), not a timeout", res)
	}
}

func TestOutputIsCapped(t *testing.T) {
	res := Run(context.Background(), child("chatty"))
	if !res.OK() || len(res.Output) > MaxOutput+100 || !strings.HasSuffix(res.Output, "(output truncated)\n") {
		t.Fatalf("ok=%v len=%d", res.OK(), len(res.Output))
	}
}

func TestMissingProgramIsAnError(t *testing.T) {
	res := Run(context.Background(), Cmd{Name: "no-such-program-anywhere"})
	if res.Err == nil || res.ExitCode != -1 {
		t.Fatalf("got %+v", res)
	}
}

// A child that crowds the CPUs is measured as starved; one that naps is not.
func TestStarvationIsMeasuredPerChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("measured from /proc on Linux")
	}
	nap := Run(context.Background(), child("nap"))
	crowd := Run(context.Background(), child("crowd"))
	if nap.Starved < 0 || crowd.Starved < 0 {
		t.Fatalf("not measured: nap %v, crowd %v", nap.Starved, crowd.Starved)
	}
	// 4 spinning threads per CPU: each runs about a quarter of the time.
	if crowd.Starved < 1 {
		t.Errorf("a crowding child waited only %.2f of its wall time (summed over threads); want well over 1", crowd.Starved)
	}
	// A napping child waits for a CPU only when it wakes: about 0 on a
	// quiet machine, a share of its naps on a busy one (0.53 in a full CI
	// run at load 15), never near a crowding child, which waits all the time
	// on every thread.
	if nap.Starved > 0.2 && nap.Starved > crowd.Starved/3 {
		t.Errorf("a napping child waited %.2f of its time for a CPU, a crowding one %.2f; want about 0, and on a busy machine far under the crowding one", nap.Starved, crowd.Starved)
	}
}

// A stall of 150 ms in a run of over 2 s is a small share of the run but
// most of the StarvedWindow around it: StarvedPeak sees it.
func TestAShortStallShowsInTheWorstWindow(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("measured from /proc on Linux")
	}
	res := Run(context.Background(), child("stall-then-nap"))
	if res.StarvedPeak < 0 {
		t.Fatalf("not measured: %+v", res)
	}
	// Each of the 2 threads per CPU runs about half of the 150 ms: they
	// wait about 75 ms each, 150 ms per CPU, within one window of 250 ms.
	if res.StarvedPeak < 0.4 || res.StarvedPeak < 3*res.Starved {
		t.Errorf("a child held back for 150 ms of its %s: worst window %.2f starved, whole run %.2f; want the window at least 0.4 and far over the run's share",
			res.Elapsed.Round(time.Millisecond), res.StarvedPeak, res.Starved)
	}
	t.Logf("worst window %.2f starved, whole run %.2f", res.StarvedPeak, res.Starved)
}

// A Buffer with a Limit keeps that much: lab verify reads every event of a
// long go test -json run through one.
func TestBufferLimit(t *testing.T) {
	b := Buffer{Limit: 3 * MaxOutput}
	chunk := []byte(strings.Repeat("x", 1024))
	for range 2 * MaxOutput / 1024 {
		b.Write(chunk)
	}
	if n := len(b.Bytes()); n != 2*MaxOutput {
		t.Fatalf("kept %d bytes of %d under a limit of %d", n, 2*MaxOutput, 3*MaxOutput)
	}
}
