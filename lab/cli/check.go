package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/lab/grade15"
	"quoteflowlab.dev/lab/internal/check"
	"quoteflowlab.dev/lab/internal/course"
)

// runCheck implements `lab check ENN [--answer DIR] [--json] [--timeout D] [--variant NAME]`.
func runCheck(args []string, stdout, stderr io.Writer) int {
	opts, asJSON, code, ok := checkOptions(args, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	what := "building and running the answer against its checkpoint and mutants"
	if check.HasGrader(opts.Lesson.Exercise()) {
		what = "building the tools and grading them against a provider lab of its own"
	}
	slow := time.AfterFunc(3*time.Second, func() {
		fmt.Fprintf(stderr, "lab check: %s (a first build takes longer)...\n", what)
	})
	r := check.Check(ctx, opts)
	slow.Stop()

	if ctx.Err() == nil && opts.Variant == "" && (opts.Answer == "" || opts.Answer == opts.Lesson.Starter()) {
		remember(opts.Root, r, stderr) // the student's own exercise, checked to the end
	}
	if asJSON {
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

// checkOptions parses lab check's arguments. When ok is false, code is the
// exit code: 2 for a usage error, 1 outside the repository, 0 after -h.
func checkOptions(args []string, stderr io.Writer) (opts check.Options, asJSON bool, code int, ok bool) {
	fs := newFlags("check", "ENN [--answer DIR] [--json] [--timeout D] [--variant NAME]", stderr)
	noteState(fs)
	answer := fs.String("answer", "", "the answer's package `dir` (default lessons/NN/exercise), relative to the current directory")
	fs.BoolVar(&asJSON, "json", false, "print the report as one JSON document")
	timeout := fs.Duration("timeout", check.DefaultTimeout, "kill a run of the answer after this long (E15: the grader bounds each tool run itself)")
	variant := fs.String("variant", "", "instructors, E15 only: grade the answer with the broken variant `NAME` (a folder of\n"+
		grade15.VariantsDir+"/) swapped in through an overlay, to see the grader reject it;\n"+
		"use with --answer "+grade15.ReferenceAnswer+". No file of the answer changes, the run is not\n"+
		"recorded as progress, and a rejected variant exits 1 like any failing answer")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return opts, false, code, false
	}
	if len(pos) != 1 {
		return opts, false, usageError(fs, stderr, "want exactly one exercise, like E14"), false
	}
	lesson, err := course.ParseExercise(pos[0])
	if err != nil {
		return opts, false, usageError(fs, stderr, "%v", err), false
	}
	if *timeout <= 0 {
		return opts, false, usageError(fs, stderr, "--timeout must be positive"), false
	}
	if *variant != "" && lesson.Exercise() != "E15" {
		return opts, false, usageError(fs, stderr, "--variant is for E15 only: it swaps a broken variant of the reference budget tools into the answer"), false
	}
	root, ok := findRoot("check", stderr)
	if !ok {
		return opts, false, 1, false
	}
	opts = check.Options{Root: root, Lesson: lesson, Timeout: *timeout, Variant: *variant}
	if *variant != "" {
		return variantOptions(fs, stderr, opts, asJSON, *answer)
	}
	if *answer == "" {
		starter := filepath.Join(root, filepath.FromSlash(lesson.Starter()))
		if _, err := os.Stat(starter); err != nil && !check.HasGrader(lesson.Exercise()) {
			fmt.Fprintf(stderr, "lab check: %s has no starter yet (%v)\n", lesson.Exercise(), err)
			return opts, false, 1, false
		}
		return opts, asJSON, 0, true
	}
	wd, err := os.Getwd()
	if err == nil {
		opts.Answer, err = check.ResolveAnswer(root, wd, *answer)
	}
	if err == nil && !check.HasGrader(lesson.Exercise()) {
		err = hasGoFiles(root, opts.Answer, lesson)
	}
	if err != nil {
		return opts, false, usageError(fs, stderr, "%v", err), false
	}
	return opts, asJSON, 0, true
}

// variantOptions finishes checkOptions for `lab check E15 --variant NAME`:
// the name must be a variant in testscripts/mutants/E15/, and the file it
// replaces in the answer must be the one it was made from.
func variantOptions(fs *flag.FlagSet, stderr io.Writer, opts check.Options, asJSON bool, answer string) (check.Options, bool, int, bool) {
	names, err := grade15.VariantNames(opts.Root)
	if err != nil {
		fmt.Fprintf(stderr, "lab check: %v\n", err)
		return opts, false, 1, false
	}
	if !slices.Contains(names, opts.Variant) {
		known := strings.Join(names, ", ")
		if known == "" {
			known = "none in " + grade15.VariantsDir
		}
		return opts, false, usageError(fs, stderr, "unknown variant %q (known: %s)", opts.Variant, known), false
	}
	v, err := grade15.LoadVariant(opts.Root, opts.Variant)
	if err != nil {
		fmt.Fprintf(stderr, "lab check: %v\n", err)
		return opts, false, 1, false
	}
	if answer == "" {
		opts.Answer = opts.Lesson.Starter()
	} else if wd, err := os.Getwd(); err != nil {
		fmt.Fprintf(stderr, "lab check: %v\n", err)
		return opts, false, 1, false
	} else if opts.Answer, err = check.ResolveAnswer(opts.Root, wd, answer); err != nil {
		return opts, false, usageError(fs, stderr, "%v", err), false
	}
	if err := v.Fits(filepath.Join(opts.Root, filepath.FromSlash(opts.Answer))); err != nil {
		if opts.Answer != grade15.ReferenceAnswer {
			return opts, false, usageError(fs, stderr, "--variant %s breaks %s/%s of the reference answer, and %s/%s is not that file: add --answer %s",
				v.Name, grade15.ReferenceAnswer, v.Replaces, opts.Answer, v.Replaces, grade15.ReferenceAnswer), false
		}
		fmt.Fprintf(stderr, "lab check: variant %s is stale: %s/%s changed since it was made; remake it (%s/README.md)\n",
			v.Name, opts.Answer, v.Replaces, grade15.VariantsDir)
		return opts, false, 1, false
	}
	return opts, asJSON, 0, true
}

// hasGoFiles reports an answer directory with no Go file in it: a mutant-
// checked answer is one main package, like the starter.
func hasGoFiles(root, answer string, l course.Lesson) error {
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(answer), "*.go"))
	if err != nil || len(matches) > 0 {
		return err
	}
	return fmt.Errorf("answer %s has no .go files: give the directory of your main package, like %s", answer, l.Starter())
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
	if err := course.Record(course.StateDir(root), r.Exercise, p); err != nil {
		fmt.Fprintf(stderr, "lab check: could not remember the result for `lab list`: %v\n", err)
	}
}
