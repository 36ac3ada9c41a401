package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"quoteflowlab.dev/lab/internal/check"
	"quoteflowlab.dev/lab/internal/course"
)

// runCheck implements `lab check ENN [--answer DIR] [--json] [--timeout D]`.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", "ENN [--answer DIR] [--json] [--timeout D]", stderr)
	answer := fs.String("answer", "", "the answer's package `dir` (default lessons/NN/exercise), relative to the current directory")
	asJSON := fs.Bool("json", false, "print the report as one JSON document")
	timeout := fs.Duration("timeout", check.DefaultTimeout, "kill a run of the answer after this long")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one exercise, like E14")
	}
	lesson, err := course.ParseExercise(pos[0])
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if *timeout <= 0 {
		return usageError(fs, stderr, "--timeout must be positive")
	}
	root, ok := findRoot("check", stderr)
	if !ok {
		return 1
	}
	opts := check.Options{Root: root, Lesson: lesson, Timeout: *timeout}
	if *answer != "" {
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintf(stderr, "lab check: %v\n", err)
			return 1
		}
		if opts.Answer, err = check.ResolveAnswer(root, wd, *answer); err != nil {
			return usageError(fs, stderr, "%v", err)
		}
	} else if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(lesson.Starter()))); err != nil && !check.HasGrader(lesson.Exercise()) {
		fmt.Fprintf(stderr, "lab check: %s has no starter yet (%v)\n", lesson.Exercise(), err)
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	slow := time.AfterFunc(3*time.Second, func() {
		fmt.Fprintln(stderr, "lab check: building and running the answer against its checkpoint and mutants (a first build takes longer)...")
	})
	r := check.Check(ctx, opts)
	slow.Stop()

	if opts.Answer == "" || opts.Answer == lesson.Starter() {
		remember(root, r, stderr)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "lab check: %v\n", err)
			return 1
		}
	} else {
		r.WriteText(stdout)
	}
	if !r.OK {
		return 1
	}
	return 0
}

// remember records the verdict for `lab list`; losing it is not worth
// failing the check over, so a problem is only reported.
func remember(root string, r check.Report, stderr io.Writer) {
	status := course.Failing
	switch r.Verdict {
	case check.Passed:
		status = course.Passed
	case check.NotStarted:
		status = course.NotStarted
	}
	p := course.Progress{Status: status, CheckedAt: time.Now().UTC().Truncate(time.Second), Summary: r.Summary}
	if err := course.Record(course.StateDir(root), r.Exercise, p); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "lab check: could not remember the result for `lab list`: %v\n", err)
	}
}
