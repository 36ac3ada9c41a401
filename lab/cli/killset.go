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

// runKillset implements `lab verify --killset [--runs N] ENN...`: for each
// exercise (every mutant-graded one when none is named), generate the
// mutants of its scope, run the reference answer on each N times and write
// lessons/NN/checks/generated.txt (reviews of survivors carried over).
// With wheats (`lab verify --wheats`), the same for the wheats its
// allowed.txt allows, into wheats.txt.
func runKillset(root string, names []string, runs int, wheats bool, stdout, stderr io.Writer) int {
	flag := "--killset"
	if wheats {
		flag = "--wheats"
	}
	var lessons []course.Lesson
	for _, n := range names {
		l, err := course.Find(root, n)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v\n", flag, err)
			return 2
		}
		lessons = append(lessons, l)
	}
	if len(lessons) == 0 {
		all, err := course.Load(root)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v\n", flag, err)
			return 1
		}
		for _, l := range all {
			if l.Method == report.Mutants {
				lessons = append(lessons, l)
			}
		}
	}
	if runs < 3 {
		fmt.Fprintf(stderr, "lab verify %s: --runs must be at least 3 (a mutant is required, and a wheat kept, only when the reference fails, or passes, on it every run)\n", flag)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code := 0
	for _, l := range lessons {
		if l.Method != report.Mutants {
			fmt.Fprintf(stderr, "lab verify %s: %s is not graded with mutants\n", flag, l.Exercise())
			return 2
		}
		began := time.Now()
		read, run, file := mutation.ReadGenerated, mutation.KillSet, mutation.GeneratedFile(l)
		if wheats {
			if !mutation.HasAllowed(root, l) {
				fmt.Fprintf(stderr, "lab verify --wheats: %s has no %s: it allows no change to generate wheats from\n", l.Exercise(), mutation.AllowedFile(l))
				code = 1
				continue
			}
			read, run, file = mutation.ReadWheats, mutation.WheatSet, mutation.WheatsFile(l)
		}
		prev, err := read(root, l)
		if err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v (its reviews are not carried over)\n", flag, err)
			prev = nil
		}
		res, err := run(ctx, grade.Request{Root: root, Lesson: l}, runs, prev, stdout)
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
		out := filepath.Join(root, filepath.FromSlash(file))
		if err := check.WriteIfChanged(out, b.Bytes()); err != nil {
			fmt.Fprintf(stderr, "lab verify %s: %v\n", flag, err)
			return 1
		}
		what := "survivor's"
		if wheats {
			what = "rejected wheat's"
		}
		fmt.Fprintf(stdout, "%s: wrote %s (%.0f s); review each %s `review:` line, then go test ./lab/coursetest/\n",
			l.Exercise(), file, time.Since(began).Seconds(), what)
	}
	return code
}
