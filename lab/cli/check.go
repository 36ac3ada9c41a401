package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/grade/measured"
	"quoteflowlab.dev/lab/internal/grade/mutation"
	"quoteflowlab.dev/lab/internal/report"
)

// checkRequest is a parsed `lab check` command line.
type checkRequest struct {
	opts    mutation.Options
	variant string // measured exercises, instructors: a broken variant to grade
	asJSON  bool
}

// runCheck implements `lab check ENN [--answer DIR] [--json] [--timeout D] [--repeat N] [--variant NAME]`.
func runCheck(args []string, stdout, stderr io.Writer) int {
	req, code, ok := checkOptions(args, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r := runChecked(ctx, req, stderr)
	if ctx.Err() == nil && req.variant == "" && req.opts.Answer == req.opts.Lesson.Starter {
		remember(req.opts.Root, r, stderr) // the student's own exercise, checked to the end
	}
	if req.asJSON {
		if err := r.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "lab check: %v\n", err)
			return 1
		}
	} else {
		r.WriteText(stdout)
	}
	return r.Verdict.ExitCode()
}

// runChecked checks the answer by its lesson's grading method, saying on
// stderr what takes long when it does.
func runChecked(ctx context.Context, req checkRequest, stderr io.Writer) report.Report {
	l := req.opts.Lesson
	what := "building and running the answer against its checkpoint, mutants and wheats"
	if l.Method == report.Measured {
		what = "building the tools and grading them against a provider lab of its own"
	}
	slow := time.AfterFunc(3*time.Second, func() {
		fmt.Fprintf(stderr, "lab check: %s (a first build takes longer)...\n", what)
	})
	defer slow.Stop()
	switch l.Method {
	case report.Measured:
		return measured.Check(ctx, req.opts, req.variant)
	default:
		return mutation.Mutants(ctx, req.opts)
	}
}

// checkOptions parses lab check's arguments. When ok is false, code is the
// exit code: 2 for a usage error, 1 outside the repository, 0 after -h.
func checkOptions(args []string, stderr io.Writer) (req checkRequest, code int, ok bool) {
	fs := newFlags("check", "ENN [--answer DIR] [--json] [--timeout D] [--repeat N]", stderr)
	noteState(fs)
	answer := fs.String("answer", "", "the answer's package `dir` (default lessons/NN/exercise), relative to the current directory.\n"+
		"Inside the course's root module, any package directory. Outside the repository, a folder\n"+
		"holding one main package (its .go files are built as if they were inside the root module,\n"+
		"so they import the checkpoints as usual). E15's answer outside the repository must be a\n"+
		"module of its own (a go.mod in the folder)")
	fs.BoolVar(&req.asJSON, "json", false, "print the report as one JSON document (schema_version "+fmt.Sprint(report.SchemaVersion)+"; see the README)")
	timeout := fs.Duration("timeout", mutation.DefaultTimeout, "kill a run of the answer after this long (E15: the grader bounds each tool run itself)")
	repeat := fs.Int("repeat", 1, "run the answer `N` times on every build: an answer whose result changes is reported flaky")
	separate := fs.Bool("separate", false, "instructors: build each mutant and wheat on its own instead of in one mutant schema (slower)")
	variant := fs.String("variant", "", "instructors, measured exercises (E15): grade the answer with the broken variant `NAME`\n"+
		"(lessons/15/mutants/NAME.txtar, kind variant) swapped in through an overlay, to see the\n"+
		"grader reject it; use with --answer set to the reference answer. No file changes, the run\n"+
		"is not recorded as progress, and a rejected variant exits 1 like any failing answer")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return req, code, false
	}
	if len(pos) != 1 {
		return req, usageError(fs, stderr, "want exactly one exercise, like E14"), false
	}
	lesson, err := course.ParseExercise(pos[0])
	if err != nil {
		return req, usageError(fs, stderr, "%v", err), false
	}
	switch {
	case *timeout <= 0:
		return req, usageError(fs, stderr, "--timeout must be positive"), false
	case *repeat < 1 || *repeat > 100:
		return req, usageError(fs, stderr, "--repeat must be between 1 and 100"), false
	case *variant != "" && lesson.Method != report.Measured:
		return req, usageError(fs, stderr, "--variant is for measured exercises (E15): it swaps a broken variant of the reference tools into the answer; %s is checked with mutants", lesson.Exercise), false
	case (*repeat > 1 || *separate) && lesson.Method == report.Measured:
		return req, usageError(fs, stderr, "--repeat and --separate are for exercises checked with mutants; %s's grader re-runs a timed property itself", lesson.Exercise), false
	}
	root, ok := findRoot("check", stderr)
	if !ok {
		return req, 1, false
	}
	req.opts = mutation.Options{Root: root, Lesson: lesson, Answer: lesson.Starter, Timeout: *timeout, Repeat: *repeat, Separate: *separate}
	req.variant = *variant
	if *variant != "" {
		v, err := measured.Variant(root, lesson, *variant)
		if err != nil {
			return req, usageError(fs, stderr, "%v", err), false
		}
		if ref := filepath.Join(root, filepath.FromSlash(lesson.Reference)); !sameDir(root, *answer, ref) {
			return req, usageError(fs, stderr, "--variant %s edits %s, a file of the reference answer: add --answer %s", v.Name, v.File, lesson.Reference), false
		}
	}
	if *answer == "" {
		starter := filepath.Join(root, filepath.FromSlash(lesson.Starter))
		if _, err := os.Stat(starter); err != nil {
			fmt.Fprintf(stderr, "lab check: %s has no starter yet (%v)\n", lesson.Exercise, err)
			return req, 1, false
		}
		return req, 0, true
	}
	wd, err := os.Getwd()
	if err == nil {
		req.opts.Answer, err = mutation.ResolveAnswer(root, wd, *answer)
	}
	if err == nil && lesson.Method == report.Measured && filepath.IsAbs(req.opts.Answer) {
		if _, serr := os.Stat(filepath.Join(req.opts.Answer, "go.mod")); serr != nil {
			err = fmt.Errorf("%s is outside the repository and is not a module of its own: copy the folder into the repository (for example to lessons/15/mine), or give it a go.mod", *answer)
		}
	}
	if err == nil && lesson.Method == report.Mutants {
		err = hasGoFiles(root, req.opts.Answer, lesson)
	}
	if err != nil {
		return req, usageError(fs, stderr, "%v", err), false
	}
	return req, 0, true
}

// sameDir reports whether the answer flag names dir.
func sameDir(root, answer, dir string) bool {
	if answer == "" {
		return false
	}
	wd, err := os.Getwd()
	if err != nil {
		return false
	}
	abs := answer
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(wd, answer)
	}
	return filepath.Clean(abs) == filepath.Clean(dir)
}

// hasGoFiles reports an answer directory with no Go file in it: a mutant-
// checked answer is one main package, like the starter.
func hasGoFiles(root, answer string, l course.Lesson) error {
	dir := answer
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, filepath.FromSlash(answer))
	}
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(matches) > 0 {
		return err
	}
	return fmt.Errorf("answer %s has no .go files: give the directory of your main package, like %s", answer, l.Starter)
}

// remember records the verdict for `lab list`; losing it is not worth
// failing the check over, so a problem is only reported.
func remember(root string, r report.Report, stderr io.Writer) {
	status := course.Failing
	switch r.Verdict {
	case report.Passed:
		status = course.Passed
	case report.NotStarted:
		status = course.NotStarted
	case report.Inconclusive:
		return // says nothing about the answer
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
