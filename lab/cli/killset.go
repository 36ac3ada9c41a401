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

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/grade"
	"quoteflowlab.dev/lab/internal/grade/mutation"
	"quoteflowlab.dev/lab/internal/report"
	"quoteflowlab.dev/lab/internal/variant"
)

// runKillset implements `lab verify --killset [--runs N] ENN...`: for each
// exercise (every mutant-graded one when none is named), generate the
// mutants of its scope, run the reference answer on each N times and write
// lessons/NN/mutants/generated.txt (reviews of survivors carried over).
func runKillset(root string, names []string, runs int, stdout, stderr io.Writer) int {
	var lessons []course.Lesson
	for _, n := range names {
		l, err := course.ParseExercise(n)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify --killset: %v\n", err)
			return 2
		}
		lessons = append(lessons, l)
	}
	if len(lessons) == 0 {
		for _, l := range course.Lessons {
			if l.Method == report.Mutants {
				lessons = append(lessons, l)
			}
		}
	}
	if runs < 3 {
		fmt.Fprintln(stderr, "lab verify --killset: --runs must be at least 3 (a mutant is required only when the reference fails on it every run)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code := 0
	for _, l := range lessons {
		if l.Method != report.Mutants {
			fmt.Fprintf(stderr, "lab verify --killset: %s is not graded with mutants\n", l.Exercise())
			return 2
		}
		began := time.Now()
		prev, err := mutation.ReadGenerated(root, l)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify --killset: %v (its reviews are not carried over)\n", err)
			prev = nil
		}
		res, err := mutation.KillSet(ctx, grade.Request{Root: root, Lesson: l}, runs, prev, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify --killset %s: %v\n", l.Exercise(), err)
			code = 1
			continue
		}
		var b bytes.Buffer
		if err := res.Write(&b); err != nil {
			fmt.Fprintf(stderr, "lab verify --killset: %v\n", err)
			return 1
		}
		out := filepath.Join(root, filepath.FromSlash(mutation.GeneratedFile(l)))
		if err := variant.WriteIfChanged(out, b.Bytes()); err != nil {
			fmt.Fprintf(stderr, "lab verify --killset: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: wrote %s (%.0f s); review each survivor's `review:` line, then go test ./lab/internal/course/\n",
			l.Exercise(), mutation.GeneratedFile(l), time.Since(began).Seconds())
	}
	return code
}
