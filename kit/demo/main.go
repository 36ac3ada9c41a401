package demo

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

// A Demo is one experiment of a lesson page.
type Demo struct {
	Name    string
	Summary string // one line: what it runs
	Run     func(ctx context.Context, e *Env, w io.Writer) error
}

// ResultEnv names the variable that asks the program for a Result file.
const ResultEnv = "LAB_DEMO_RESULT"

// A Result is what a demo program says of a run besides its output.
type Result struct {
	Machine report.Machine `json:"machine"`         // how busy the machine was while the demo ran (after its builds)
	Error   string         `json:"error,omitempty"` // why the demo failed ("": it ran)
}

// ReadResult reads a Result file.
func ReadResult(file string) (Result, error) {
	var r Result
	data, err := os.ReadFile(file)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(data, &r)
}

// Main is a lesson's demo program: it answers the protocol (see the
// package doc) for lesson's demos, and exits.
func Main(lesson int, demos ...Demo) {
	if os.Getenv(ResultEnv) == "" {
		// Run by go run, which passes no signal on: it ends when go run
		// does. Run by lab, it ends with lab as every child lab starts
		// does (runner.Start).
		runner.EndWithParent()
	}
	os.Exit(run(lesson, demos, os.Args[1:], os.Stdout, os.Stderr))
}

func run(lesson int, demos []Demo, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(fmt.Sprintf("demo %d", lesson), flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.Bool("list", false, "list the demos: NAME, a tab, what it shows")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./lessons/%d/demo NAME (or lab demo %d NAME)\n\ndemos:\n", lesson, lesson)
		for _, d := range demos {
			fmt.Fprintf(stderr, "  %-16s %s\n", d.Name, d.Summary)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *list {
		for _, d := range demos {
			fmt.Fprintf(stdout, "%s\t%s\n", d.Name, d.Summary)
		}
		return 0
	}
	var d *Demo
	for i := range demos {
		if fs.NArg() == 1 && demos[i].Name == fs.Arg(0) {
			d = &demos[i]
		}
	}
	if d == nil {
		fmt.Fprintf(stderr, "demo %d: no demo %q\n", lesson, strings.Join(fs.Args(), " "))
		fs.Usage()
		return 2
	}
	resultFile := os.Getenv(ResultEnv)
	wd, err := os.Getwd()
	root := ""
	if err == nil {
		root, err = course.FindRoot(wd)
	}
	var m report.Machine
	if err == nil {
		ctx, stop := runner.StopContext()
		defer stop()
		stdout, stderr = runner.StopOnClosedOutput(stop, stdout, stderr)
		m, err = runOne(ctx, root, *d, stdout, stderr)
		if err != nil && ctx.Err() != nil {
			err = errors.New("interrupted; everything it started is stopped")
		}
	}
	if resultFile != "" {
		r := Result{Machine: m}
		if err != nil {
			r.Error = err.Error()
		}
		data, _ := json.Marshal(r)
		if werr := os.WriteFile(resultFile, data, 0o644); werr != nil && err == nil {
			err = werr
		}
	} else {
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "lab demo %d %s: %v\n", lesson, d.Name, err)
		case m.Busy:
			fmt.Fprintf(stderr, "lab demo %d %s: %s\n", lesson, d.Name, BusyNote(m))
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

// runOne runs d in a fresh Env that it stops afterwards, and says how busy
// the machine was while the experiment ran (after the builds).
func runOne(ctx context.Context, root string, d Demo, stdout, log io.Writer) (report.Machine, error) {
	env, err := NewEnv(root, log)
	if err != nil {
		return report.Machine{}, err
	}
	defer env.Close()
	err = d.Run(ctx, env, stdout)
	return env.Machine(), err
}

// BusyNote says that the machine held a run back, and what that means for
// its figures.
func BusyNote(m report.Machine) string {
	return fmt.Sprintf("the machine was busy while it ran: %s;\n"+
		"its timings are the machine's, not the code's, and may be off the page's: run it again when it is quieter", Describe(m))
}

// Describe says how busy the machine was, and how much it held the demo back.
func Describe(m report.Machine) string {
	return fmt.Sprintf("%s; lab's threads waited for a CPU %.0f%% of the run", machine.Describe(m), 100*m.MaxStarved)
}
