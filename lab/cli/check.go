package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/lab/internal/mutation"
)

// checkRequest is a parsed `lab check` command line: the request, built
// once here, and the grader that accepted it.
type checkRequest struct {
	req     grade.Request
	grader  grade.Grader
	asJSON  bool
	timings bool
}

// graderFor is the one place that picks a lesson's grader: its own
// program when it has one (lessons/NN/grader), else the mutation grader.
func graderFor(root string, l course.Lesson) grade.Grader {
	if dir := l.Dir() + "/grader"; exists(root, dir) {
		return &grade.Program{Dir: dir}
	}
	return &mutation.Grader{}
}

// runCheck implements `lab check ENN [--answer DIR] [--json] [--timings] [--timeout D] [--repeat N] [--separate] [--only NAME] [--variant NAME] [--seed N] [--case CASE]`.
func runCheck(args []string, stdout, stderr io.Writer) int {
	c, code, ok := checkOptions(args, stderr)
	if !ok {
		return code
	}
	ctx, stop := runner.StopContext()
	defer stop()
	runner.BecomeSubreaper()
	r := runChecked(ctx, c, stderr)
	if ctx.Err() == nil && recorded(c.req) {
		remember(c.req.Root, r, stderr) // the student's own exercise, checked to the end
	}
	if c.asJSON {
		if err := r.WriteJSON(stdout); err != nil {
			return failed(stderr, "lab check", err)
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
		fmt.Fprint(stderr, msg.T("check.slow", c.grader.Doing()))
	})
	defer slow.Stop()
	r := c.grader.Check(ctx)
	// Nothing the answer started outlives the check: what a run left is
	// found when that run ends, so anything found now hid itself behind
	// the mark of a run still going, and the check fails.
	killed, left := runner.Sweep()
	grade.Swept(&r, c.req.Again(), killed, left)
	return r
}

// checkOptions parses lab check's arguments into a request and has the
// lesson's grader accept it. When ok is false, code is the exit code: 2 for
// a usage error, 1 outside the repository, 0 after -h.
func checkOptions(args []string, stderr io.Writer) (c checkRequest, code int, ok bool) {
	f := form{name: "check", usage: "ENN [--answer DIR] [--json] [--timings] [--timeout D] [--repeat N] [--separate] [--only NAME] [--variant NAME] [--seed N] [--case CASE]", state: true, min: 1, max: 1, wrong: "usage.one_exercise", exercise: true}
	fs := f.flags(stderr)
	answer := fs.String("answer", "", msg.T("check.flag.answer"))
	fs.BoolVar(&c.asJSON, "json", false, msg.T("check.flag.json", report.SchemaVersion))
	timeout := fs.Duration("timeout", grade.DefaultTimeout, msg.T("check.flag.timeout"))
	repeat := fs.Int("repeat", 1, msg.T("check.flag.repeat"))
	fs.BoolVar(&c.timings, "timings", false, msg.T("check.flag.timings"))
	only := fs.String("only", "", msg.T("check.flag.only"))
	separate := fs.Bool("separate", false, msg.T("check.flag.separate"))
	variant := fs.String("variant", "", msg.T("check.flag.variant"))
	seed := fs.Uint64("seed", 0, msg.T("check.flag.seed"))
	oneCase := fs.String("case", "", msg.T("check.flag.case"))
	in, code, ok := f.parse(fs, args, stderr)
	if !ok {
		return c, code, false
	}
	switch {
	case *timeout <= 0:
		return c, usageError(fs, stderr, "%s", msg.T("usage.timeout_positive")), false
	case *repeat < 1 || *repeat > 100:
		return c, usageError(fs, stderr, "%s", msg.T("usage.repeat_range")), false
	}
	req := grade.Request{Root: in.root, Lesson: in.lesson, Timeout: *timeout, Repeat: *repeat, Separate: *separate, Variant: *variant, Only: *only, Seed: *seed, Case: *oneCase}
	c.grader, c.req, code, ok = graded(fs, stderr, req, *answer)
	return c, code, ok
}

// graded completes req (its answer: the folder answer, or the exercise's
// starter when answer is "") and returns it with the lesson's grader,
// which has accepted it: what lab check and lab watch check. A problem is
// printed as fs's command's; code is the exit code when ok is false (2 for
// a usage error, with fs's usage).
func graded(fs *flag.FlagSet, stderr io.Writer, req grade.Request, answer string) (g grade.Grader, _ grade.Request, code int, ok bool) {
	req.Answer = req.Lesson.Starter()
	if answer == "" {
		starter := filepath.Join(req.Root, filepath.FromSlash(req.Answer))
		if _, err := os.Stat(starter); err != nil {
			fmt.Fprint(stderr, msg.T("check.no_starter", fs.Name(), req.Lesson.Exercise(), err))
			return nil, req, 1, false
		}
	} else {
		wd, err := os.Getwd()
		if err == nil {
			req.Answer, err = grade.ResolveAnswer(req.Root, wd, answer)
		}
		if err != nil {
			return nil, req, usageError(fs, stderr, "%v", err), false
		}
	}
	g = graderFor(req.Root, req.Lesson)
	if err := g.Accept(req); err != nil {
		return nil, req, usageError(fs, stderr, "%v", err), false
	}
	return g, req, 0, true
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
		fmt.Fprint(stderr, msg.T("check.warning", w))
	}
	if err != nil {
		fmt.Fprint(stderr, msg.T("check.not_remembered", err))
	}
}
