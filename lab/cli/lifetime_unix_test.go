//go:build unix

package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"time"

	"quoteflowlab.dev/lab/internal/demo"
)

// The lifetime tests run this test binary as lab (runAsLab), and in three
// more parts, chosen in testRoles:
//
//   - started with --addr as its first argument, as lab demo starts a
//     QuoteFlow build, it is a stand-in for one: it listens on a free port,
//     says so in QuoteFlow's words, and serves until killed;
//   - as lab, it has one more demo, `lab demo 0 hold`: a redis-server (when
//     there is one on PATH) and two QuoteFlow stand-ins, then "ready", then
//     a line every 20 ms until it is stopped;
//   - `lab demo 0 wait` says "started", waits 1.5 s and ends;
//   - with goRunRole set, it is go run's stand-in: it runs the rest of its
//     command line as lab, in a child process, and passes no signal on.
const goRunRole = "LAB_CLI_TEST_GO_RUN"

func testRoles() {
	if len(os.Args) > 2 && os.Args[1] == "--addr" {
		os.Exit(fakeQuoteflow(os.Args[2]))
	}
	if os.Getenv(goRunRole) == "1" {
		os.Exit(fakeGoRun(os.Args[1:]))
	}
	if len(demo.Find(0, "hold")) == 0 {
		demo.All = append(demo.All,
			demo.Demo{Lesson: 0, Name: "hold", Summary: "lifetime tests: start processes, then hold", Run: holdDemo},
			demo.Demo{Lesson: 0, Name: "wait", Summary: "the busy-machine test: say started, wait 1.5 s", Run: waitDemo})
	}
}

func fakeQuoteflow(addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("quoteflow listening on http://%s (a stand-in)\n", ln.Addr())
	http.Serve(ln, http.NotFoundHandler())
	return 1
}

// fakeGoRun runs args as lab in a child, as go run runs the program it
// built: the child's output is its own, Ctrl-C and SIGQUIT are ignored (go
// run leaves them to the child, which gets them from the terminal), and
// nothing is passed on.
func fakeGoRun(args []string) int {
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return kv == goRunRole+"=1" })
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return 1
	}
	return 0
}

func holdDemo(ctx context.Context, e *demo.Env, w io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		if _, err := e.Redis(ctx); err != nil {
			return err
		}
	}
	for range 2 {
		p, err := e.Quoteflow(ctx, exe, "http://127.0.0.1:9")
		if err != nil {
			return err
		}
		fmt.Fprintln(e.Log, p.First)
	}
	fmt.Fprintln(w, "ready")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			fmt.Fprintln(w, "still running")
		}
	}
}

func waitDemo(ctx context.Context, e *demo.Env, w io.Writer) error {
	fmt.Fprintln(w, "started")
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(1500 * time.Millisecond):
	}
	return nil
}
