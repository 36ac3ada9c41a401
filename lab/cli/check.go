package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/grade"
	"quoteflowlab.dev/lab/internal/grade/measured"
	"quoteflowlab.dev/lab/internal/grade/mutation"
	"quoteflowlab.dev/lab/internal/report"
	"quoteflowlab.dev/lab/internal/runner"
)

// checkRequest is a parsed `lab check` command line: the request, built
// once here, and the grader that accepted it.
type checkRequest struct {
	req     grade.Request
	grader  grade.Grader
	asJSON  bool
	timings bool
}

// graderFor is the one place that picks a grader for a lesson's method.
func graderFor(m report.Method) grade.Grader {
	if m == report.Measured {
		return measured.New()
	}
	return mutation.New()
}

// runCheck implements `lab check ENN [--answer DIR] [--json] [--timings] [--timeout D] [--repeat N] [--separate] [--only NAME] [--variant NAME] [--seed N] [--case CASE]`.
func runCheck(args []string, stdout, stderr io.Writer) int {
	c, code, ok := checkOptions(args, stderr)
	if !ok {
		return code
	}
	ctx, stop := stopContext()
	defer stop()
	runner.BecomeSubreaper()
	r := runChecked(ctx, c, stderr)
	if ctx.Err() == nil && recorded(c.req) {
		remember(c.req.Root, r, stderr) // the student's own exercise, checked to the end
	}
	if c.asJSON {
		if err := r.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "lab check: %v\n", err)
			return 1
		}
	} else {
		r.WriteText(stdout)
		if c.timings {
			fmt.Fprintln(stdout)
			r.WriteTimings(stdout)
		}
	}
	return r.Verdict.ExitCode()
}

// recorded reports whether a check of req is the student's progress: their
// own exercise folder, the real checkpoint.
func recorded(req grade.Request) bool {
	return req.Variant == "" && req.Only == "" && req.Answer == req.Lesson.Starter()
}

// runChecked runs the check, saying on stderr what takes long when it does.
func runChecked(ctx context.Context, c checkRequest, stderr io.Writer) report.Report {
	slow := time.AfterFunc(3*time.Second, func() {
		fmt.Fprintf(stderr, "lab check: %s (a first build takes longer)...\n", c.grader.Doing())
	})
	defer slow.Stop()
	r := c.grader.Check(ctx)
	sweptAfter(&r, c.req.Again(), runner.Sweep)
	return r
}

// sweptAfter kills whatever is still left of the check's runs (nothing the
// answer started outlives the check) and says so in the report: what a run
// left is found when that run ends, so anything found now had hidden
// itself (it carried the mark of a run still going), and the check fails.
func sweptAfter(r *report.Report, again string, sweep func() (killed, left int)) {
	killed, left := sweep()
	if killed == 0 && left == 0 {
		return
	}
	s := fmt.Sprintf("when the check ended, %d process(es) the answer started were still running, though every run had ended; lab killed them", killed)
	if left > 0 {
		s = fmt.Sprintf("when the check ended, %d process(es) the answer started were still running, though every run had ended; lab killed %d, and %d still ran after %s of killing", killed+left, killed, left, runner.SweepBound)
	}
	r.Notes = append(r.Notes, s+".")
	if r.Verdict == report.Passed {
		r.Verdict, r.OK = report.Failed, false
		r.Summary = "the answer left processes running (see the notes): an answer waits for everything it starts."
		r.Next = "wait for every process the answer starts, and stop it before the answer exits, then run `" + again + "` again"
	}
}

// checkOptions parses lab check's arguments into a request and has the
// lesson's grader accept it. When ok is false, code is the exit code: 2 for
// a usage error, 1 outside the repository, 0 after -h.
func checkOptions(args []string, stderr io.Writer) (c checkRequest, code int, ok bool) {
	fs := newFlags("check", "ENN [--answer DIR] [--json] [--timings] [--timeout D] [--repeat N] [--separate] [--only NAME] [--variant NAME] [--seed N] [--case CASE]", stderr)
	noteState(fs)
	answer := fs.String("answer", "", "the answer's package `dir` (default lessons/NN/exercise), relative to the current directory.\n"+
		"Inside the course's root module, any package directory. Outside the repository, a folder\n"+
		"holding one main package (its .go files are built as if they were inside the root module,\n"+
		"so they import the checkpoints as usual). E15's answer outside the repository must be a\n"+
		"module of its own (a go.mod in the folder)")
	fs.BoolVar(&c.asJSON, "json", false, "print the report as one JSON document (schema_version "+fmt.Sprint(report.SchemaVersion)+"; see the README)")
	timeout := fs.Duration("timeout", grade.DefaultTimeout, "kill a run of the answer after this long (E15: the grader bounds each tool run itself)")
	repeat := fs.Int("repeat", 1, "run the answer `N` times on every build: an answer whose result changes is reported flaky")
	fs.BoolVar(&c.timings, "timings", false, "after the report, say where the time went: each build, each run of the answer, each wait for a turn\n"+
		"(--json always has them, in \"timings\")")
	only := fs.String("only", "", "run the answer on the checkpoint and on the one mutant or wheat `NAME` only (exercises checked with\n"+
		"mutants; `lab show ENN NAME` shows its edit); E15: grade the one property NAME only (its tool's\n"+
		"scenarios, a few seconds). The verdict is not the exercise's and is not recorded")
	separate := fs.Bool("separate", false, "instructors: build each mutant and wheat on its own instead of in one mutant schema (slower)")
	variant := fs.String("variant", "", "instructors, measured exercises (E15): grade the answer with the broken variant `NAME`\n"+
		"(lessons/15/mutants/NAME.txtar, kind variant) swapped in through an overlay, to see the\n"+
		"grader reject it; use with --answer set to the reference answer. No file changes, the run\n"+
		"is not recorded as progress, and a rejected variant exits 1 like any failing answer")
	seed := fs.Uint64("seed", 0, "measured exercises (E15): draw the tools' cases from seed `N` (the report names the seed it drew\n"+
		"from; the same seed draws the same cases; default a new seed each check)")
	oneCase := fs.String("case", "", "measured exercises (E15): run the one case `CASE` alone, as a report prints a failing one\n"+
		"(deadline?budget=300&min=500&url=ms200, retry?url=refused&budget=900&attempts=3, call?url=reset&read=0.5);\n"+
		"only its tool's model property is reported, not the exercise's verdict")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return c, code, false
	}
	if len(pos) != 1 {
		return c, usageError(fs, stderr, "want exactly one exercise, like E14"), false
	}
	lesson, err := course.ParseExercise(pos[0])
	if err != nil {
		return c, usageError(fs, stderr, "%v", err), false
	}
	switch {
	case *timeout <= 0:
		return c, usageError(fs, stderr, "--timeout must be positive"), false
	case *repeat < 1 || *repeat > 100:
		return c, usageError(fs, stderr, "--repeat must be between 1 and 100"), false
	}
	root, ok := findRoot("check", stderr)
	if !ok {
		return c, 1, false
	}
	req := grade.Request{Root: root, Lesson: lesson, Answer: lesson.Starter(), Timeout: *timeout, Repeat: *repeat, Separate: *separate, Variant: *variant, Only: *only, Seed: *seed, Case: *oneCase}
	if *answer == "" {
		starter := filepath.Join(root, filepath.FromSlash(lesson.Starter()))
		if _, err := os.Stat(starter); err != nil {
			fmt.Fprintf(stderr, "lab check: %s has no starter yet (%v)\n", lesson.Exercise(), err)
			return c, 1, false
		}
	} else {
		wd, err := os.Getwd()
		if err == nil {
			req.Answer, err = grade.ResolveAnswer(root, wd, *answer)
		}
		if err != nil {
			return c, usageError(fs, stderr, "%v", err), false
		}
	}
	c.grader = graderFor(lesson.Method)
	if err := c.grader.Accept(req); err != nil {
		return c, usageError(fs, stderr, "%v", err), false
	}
	c.req = req
	return c, 0, true
}

// remember records the verdict for `lab list`; losing it is not worth
// failing the check over, so a problem is only reported.
func remember(root string, r report.Report, stderr io.Writer) {
	status := r.Verdict
	switch r.Verdict {
	case report.Passed, report.NotStarted:
	case report.Inconclusive:
		return // says nothing about the answer
	default:
		status = report.Failed // flaky too
	}
	p := course.Progress{Status: status, CheckedAt: time.Now().UTC().Truncate(time.Second), Summary: r.Summary}
	warnings, err := course.Record(course.StateDir(root), r.Exercise, p)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "lab check: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lab check: could not remember the result for `lab list`: %v\n", err)
	}
}
