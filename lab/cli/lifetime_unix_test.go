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

	"quoteflowlab.dev/kit/demo"
)

// The lifetime tests run this test binary as lab (runAsLab), and in four
// more parts, chosen in testRoles:
//
//   - started with --addr as its first argument, as a demo starts a
//     QuoteFlow build, it is a stand-in for one: it listens on a free port,
//     says so in QuoteFlow's words, and serves until killed;
//   - as lab, lesson 0 has a demo program: this test binary again, with
//     demoRole set, whose demos are `lab demo 0 hold`: a redis-server (when
//     there is one on PATH) and two QuoteFlow stand-ins, then "ready", then
//     a line every 20 ms until it is stopped; and `lab demo 0 wait`: it says
//     "started", waits 1.5 s and ends;
//   - with goRunRole set, it is go run's stand-in: it runs the rest of its
//     command line as lab, in a child process, and passes no signal on.
const (
	goRunRole = "LAB_CLI_TEST_GO_RUN"
	demoRole  = "LAB_CLI_TEST_DEMO"
)

func testRoles() {
	if len(os.Args) > 2 && os.Args[1] == "--addr" {
		os.Exit(fakeQuoteflow(os.Args[2]))
	}
	if os.Getenv(goRunRole) == "1" {
		os.Exit(fakeGoRun(os.Args[1:]))
	}
	if os.Getenv(demoRole) == "1" {
		demo.Main(0,
			demo.Demo{Name: "hold", Summary: "lifetime tests: start processes, then hold", Run: holdDemo},
			demo.Demo{Name: "wait", Summary: "the busy-machine test: say started, wait 1.5 s", Run: waitDemo})
	}
	lessons, build := demoLessons, buildDemo
	demoLessons = func(root string) []int { return append([]int{0}, lessons(root)...) }
	buildDemo = func(ctx context.Context, root string, lesson int) (demoProgram, error) {
		if lesson != 0 {
			return build(ctx, root, lesson)
		}
		exe, err := os.Executable()
		return demoProgram{bin: exe, env: []string{demoRole + "=1"}}, err
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
