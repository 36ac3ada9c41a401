package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/lab/internal/mutation"
)

// runKillset implements `lab verify --killset [--runs N] ENN...` (with
// wheats, `lab verify --wheats`): for each exercise (every mutant-graded
// one when none is named), Set.Run, written to the set's File.
func runKillset(root string, names []string, runs int, wheats bool, stdout, stderr io.Writer) int {
	flag, set := "--killset", mutation.Mutants
	if wheats {
		flag, set = "--wheats", mutation.Wheats
	}
	lessons, code := mutantLessons(root, flag, names, stderr)
	if code != 0 {
		return code
	}
	if runs < 3 {
		fmt.Fprintf(stderr, "lab verify %s: --runs must be at least 3 (a mutant is required, and a wheat kept, only when the reference fails, or passes, on it every run)\n", flag)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code = 0
	for _, l := range lessons {
		began := time.Now()
		if wheats && !set.Declared(root, l) {
			fmt.Fprintf(stderr, "lab verify --wheats: %s has no %s: it allows no change to generate wheats from\n", l.Exercise(), set.From(l))
			code = 1
			continue
		}
		prev, err := set.Read(root, l)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v (its reviews are not carried over)\n", flag, err)
			prev = nil
		}
		res, err := set.Run(ctx, grade.Request{Root: root, Lesson: l}, runs, prev, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify %s %s: %v\n", flag, l.Exercise(), err)
			code = 1
			continue
		}
		var b bytes.Buffer
		if err := res.Write(&b); err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v\n", flag, err)
			return 1
		}
		out := filepath.Join(root, filepath.FromSlash(set.File(l)))
		if err := check.WriteIfChanged(out, b.Bytes()); err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v\n", flag, err)
			return 1
		}
		what := "survivor's"
		if wheats {
			what = "rejected wheat's"
		}
		fmt.Fprintf(stdout, "%s: wrote %s (%.0f s); review each %s `review:` line, then go test ./lab/coursetest/\n",
			l.Exercise(), set.File(l), time.Since(began).Seconds(), what)
	}
	return code
}

// mutantLessons finds the named exercises, each graded with mutants (none
// named: every mutant-graded one); else the exit code after an error said
// on stderr.
func mutantLessons(root, flag string, names []string, stderr io.Writer) ([]course.Lesson, int) {
	var lessons []course.Lesson
	for _, n := range names {
		l, err := course.Find(root, n)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v\n", flag, err)
			return nil, 2
		}
		if l.Method != report.Mutants {
			fmt.Fprintf(stderr, "lab verify %s: %s is not graded with mutants\n", flag, l.Exercise())
			return nil, 2
		}
		lessons = append(lessons, l)
	}
	if len(lessons) == 0 {
		all, err := course.Load(root)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v\n", flag, err)
			return nil, 1
		}
		for _, l := range all {
			if l.Method == report.Mutants {
				lessons = append(lessons, l)
			}
		}
	}
	return lessons, 0
}
