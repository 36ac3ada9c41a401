package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

const demoAbout = `usage: lab demo NN [NAME]

Runs an experiment a lesson page shows, end to end: it builds the checkpoint (and the mutant
it compares with), starts the provider lab, the QuoteFlow processes and a redis-server (the
embedded stand-in when there is none) on free loopback ports, prints the page's table, and
stops everything it started, on Ctrl-C, a hangup or a closed output too (on Linux, even when
lab is killed outright). Without NAME, every demo of the lesson, in page order.

demos:
`

// runDemo runs a lesson page's experiments end to end: lesson NN's demo
// program, lessons/NN/demo (see kit/demo), built and run.
func runDemo(args []string, stdout, stderr io.Writer) int {
	f := form{name: "demo", usage: "NN [NAME]", min: 1, max: 2, wrong: "want a lesson number and, optionally, a demo name"}
	fs := f.flags(stderr)
	root, _ := course.FindRoot(".")
	help, lesson := demoHelpAsked(root, args)
	fs.Usage = func() {
		w := stderr // a usage error's; asked for, the help is the answer: stdout
		if help {
			w = stdout
		}
		fmt.Fprint(w, demoAbout)
		if root == "" {
			return
		}
		for _, n := range demoLessons(root) {
			if lesson != 0 && n != lesson {
				continue
			}
			ds, err := listDemos(context.Background(), root, n)
			if err != nil {
				fmt.Fprintf(w, "  lab demo %d: %v\n", n, err)
			}
			for _, d := range ds {
				fmt.Fprintf(w, "  lab demo %d %-16s %s\n", n, d.Name, d.Summary)
			}
		}
	}
	c, code, ok := f.parse(fs, args, stderr)
	if !ok {
		return code
	}
	root, pos := c.root, c.pos
	lesson, err := strconv.Atoi(pos[0])
	if err != nil || !slices.Contains(demoLessons(root), lesson) {
		return usageError(fs, stderr, "no demo %q", fmt.Sprint(pos))
	}
	ds, err := listDemos(context.Background(), root, lesson)
	if err != nil {
		fmt.Fprintf(stderr, "lab demo %d: %v\n", lesson, err)
		return 1
	}
	var names []string
	for _, d := range ds {
		if len(pos) == 1 || d.Name == pos[1] {
			names = append(names, d.Name)
		}
	}
	if len(names) == 0 {
		return usageError(fs, stderr, "no demo %q", fmt.Sprint(pos))
	}
	ctx, stop := runner.StopContext()
	defer stop()
	stdout, stderr = runner.StopOnClosedOutput(stop, stdout, stderr)
	for i, name := range names {
		if ctx.Err() != nil {
			return 1
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if len(names) > 1 {
			fmt.Fprintf(stdout, "$ lab demo %d %s\n", lesson, name)
		}
		if _, err := Demo(ctx, root, lesson, name, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "lab demo %d %s: %v\n", lesson, name, err)
			return 1
		}
	}
	return 0
}

// demoHelpAsked reports whether args ask for the help (-h, --help), and the
// lesson of `lab demo NN --help` when NN has demos (0: every lesson's).
func demoHelpAsked(root string, args []string) (help bool, lesson int) {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--h", "--help":
			help = true
		default:
			if n, err := strconv.Atoi(a); err == nil && lesson == 0 && root != "" && slices.Contains(demoLessons(root), n) {
				lesson = n
			}
		}
	}
	return help, lesson
}

// demoLessons lists, in order, the lessons that have a demo program: by
// convention, a folder lessons/NN/demo.
var demoLessons = func(root string) []int {
	dirs, _ := filepath.Glob(filepath.Join(root, "lessons", "*", "demo"))
	var out []int
	for _, d := range dirs {
		n, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if info, serr := os.Stat(d); err == nil && serr == nil && info.IsDir() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// A demoProgram is a lesson's demo program, built: what to run, with
// which settings added to the environment.
type demoProgram struct {
	bin string
	env []string
}

// buildDemo builds lesson's demo program into lab's state folder, where
// go build finds it up to date the next time and does not link it again.
var buildDemo = func(ctx context.Context, root string, lesson int) (demoProgram, error) {
	pkg := fmt.Sprintf("./lessons/%d/demo", lesson)
	bin := filepath.Join(course.StateDir(root), "demo", strconv.Itoa(lesson), runner.Exe("demo"))
	res := runner.Build(ctx, root, "", bin, pkg)
	if !res.OK() {
		if res.Err != nil {
			return demoProgram{}, res.Err
		}
		return demoProgram{}, fmt.Errorf("go build %s: %s", pkg, strings.TrimSpace(res.Output))
	}
	return demoProgram{bin: bin}, nil
}

// built holds the demo programs this lab built, one build per lesson.
var built = struct {
	sync.Mutex
	progs map[string]demoProgram
}{progs: map[string]demoProgram{}}

// demoProgramFor builds lesson's demo program once per lab.
func demoProgramFor(ctx context.Context, root string, lesson int) (demoProgram, error) {
	built.Lock()
	defer built.Unlock()
	key := root + "\x00" + strconv.Itoa(lesson)
	if p, ok := built.progs[key]; ok {
		return p, nil
	}
	p, err := buildDemo(ctx, root, lesson)
	if err == nil {
		built.progs[key] = p
	}
	return p, err
}

// demoListTimeout caps a demo program's answer to -list.
const demoListTimeout = 30 * time.Second

// listDemos asks lesson's demo program for its demos (-list).
func listDemos(ctx context.Context, root string, lesson int) ([]demo.Demo, error) {
	p, err := demoProgramFor(ctx, root, lesson)
	if err != nil {
		return nil, err
	}
	var out runner.Buffer
	res := runner.Run(ctx, runner.Cmd{Name: p.bin, Args: []string{"-list"}, Dir: root, Env: p.env, Timeout: demoListTimeout, Stdout: &out, Unmeasured: true})
	if !res.OK() {
		return nil, fmt.Errorf("%s -list: exit %d %v: %s", filepath.Base(p.bin), res.ExitCode, res.Err, strings.TrimSpace(res.Output))
	}
	var ds []demo.Demo
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		if name, summary, ok := strings.Cut(sc.Text(), "\t"); ok && name != "" {
			ds = append(ds, demo.Demo{Name: name, Summary: summary})
		}
	}
	return ds, nil
}

// demoStopWait caps how long a demo program asked to stop may take to
// stop what it started before it is killed with its group.
const demoStopWait = 10 * time.Second

// Demo runs one demo of lesson (its output to stdout and log) and returns
// how busy the machine was while the experiment ran, saying on log when
// it held the demo back. When ctx ends, the program is asked to stop
// (SIGTERM; it stops what it started), then killed with its group.
func Demo(ctx context.Context, root string, lesson int, name string, stdout, log io.Writer) (report.Machine, error) {
	p, err := demoProgramFor(ctx, root, lesson)
	if err != nil {
		return report.Machine{}, err
	}
	dir, err := demo.ScratchDir()
	if err != nil {
		return report.Machine{}, err
	}
	defer os.RemoveAll(dir)
	result := filepath.Join(dir, "result.json")
	cmd := exec.Command(p.bin, name)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), p.env...), demo.ResultEnv+"="+result)
	cmd.Stdout, cmd.Stderr = stdout, log
	cmd.WaitDelay = 2 * time.Second
	runner.SetGroup(cmd)
	if err := runner.Start(cmd); err != nil {
		return report.Machine{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-ctx.Done():
		if cmd.Process.Signal(syscall.SIGTERM) != nil { // Windows: no signal to ask with
			runner.KillGroup(cmd)
		}
		select {
		case waitErr = <-done:
		case <-time.After(demoStopWait):
			runner.KillGroup(cmd)
			waitErr = <-done
		}
	}
	r, err := demo.ReadResult(result)
	switch {
	case ctx.Err() != nil:
		return r.Machine, errors.New("interrupted; everything it started is stopped")
	case err != nil:
		return r.Machine, fmt.Errorf("the demo program ended without its result (%v): %w", waitErr, err)
	case r.Error != "":
		return r.Machine, errors.New(r.Error)
	}
	if r.Machine.Busy {
		fmt.Fprintf(log, "lab demo %d %s: %s\n", lesson, name, demo.BusyNote(r.Machine))
	}
	return r.Machine, nil
}
